"""One home per section of the lesson: what each section computes, prints, draws and wires."""
