import sys

from lesson_lib.sections.s07_ablation.cli import main

sys.exit(main())
