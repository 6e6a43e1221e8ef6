"""How the lesson runs on the learner's machine: CPUs it may use and BLAS threads."""
