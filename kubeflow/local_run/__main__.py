import sys

from kubeflow.local_run.cli import main

sys.exit(main())
