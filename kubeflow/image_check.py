"""Checks a pipeline image, or the stand-in `scripts/image-env` builds, as its
containers will use it.

    python image_check.py   # in the image's WORKDIR, with its PYTHONPATH

The component, its executors and artifact types and the demo trainer import, and
`tfrecorder_component` comes from the installed distribution (site-packages), not from
a source folder on the path. The Dockerfile runs this file when the image is built.
"""
import importlib.metadata
import os
import sys
import sysconfig
import warnings


def main() -> int:
  # Google's client libraries warn about the interpreter's age on import; not our news.
  warnings.filterwarnings('ignore', category=FutureWarning)
  import tfrecorder_component  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.adapters.component import executor, report_page, types  # pylint: disable=g-import-not-at-top,unused-import
  import pipelines.trainer_module  # pylint: disable=g-import-not-at-top,unused-import
  package_dir = os.path.dirname(os.path.realpath(tfrecorder_component.__file__))
  site_packages = os.path.realpath(sysconfig.get_paths()['purelib'])
  if os.path.commonpath([package_dir, site_packages]) != site_packages:
    print(f'tfrecorder_component is imported from {package_dir}, not from the installed '
          f'distribution in {site_packages}', file=sys.stderr)
    return 1
  version = importlib.metadata.version('tfrecorder-component')
  print(f'tfrecorder-component {version} from {package_dir}; pipelines from '
        f'{os.path.dirname(os.path.realpath(pipelines.__file__))}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
