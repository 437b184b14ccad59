"""``python -m graphleaf_edu.exercises student SOURCE DESTINATION``: write the student copies."""
import sys

from graphleaf_edu.exercises.student_copies import main

sys.exit(main())
