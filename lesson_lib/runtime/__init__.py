"""The learner's machine: memory and BLAS threads."""
