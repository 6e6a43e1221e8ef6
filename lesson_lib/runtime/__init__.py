"""The learner's machine: CPUs, memory and BLAS threads."""
