"""The lesson's section modules: what each section computes, prints and draws."""
