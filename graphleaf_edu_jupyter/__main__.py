import sys

from graphleaf_edu_jupyter import main

sys.exit(main())
