"""How the lesson runs on the learner's machine: CPUs and memory it may use, BLAS threads."""
