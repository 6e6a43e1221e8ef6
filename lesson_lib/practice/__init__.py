"""The self-test: questions as data, their checkers, code exercises, and the learner's progress
file."""
