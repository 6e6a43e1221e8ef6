"""The learner's machine: the CPUs a hub allows, and BLAS threads."""
