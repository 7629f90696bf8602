"""The in-tree PEP 517 backend of `pip install ./python`: builds the wheel for the interpreter
it runs under (python/_build/build_wheel.py does the work)."""

import os
import sys
import sysconfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import build_wheel as _wheel  # noqa: E402  (python/_build/build_wheel.py)


def _target():
    return _wheel.Target.for_interpreter(sysconfig.get_paths()["include"], sysconfig.get_config_var("EXT_SUFFIX"),
                                         sys.version_info)


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel.build(_target(), wheel_directory)


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("graphstore is built from a checkout of its repository (pip install ./python); "
                       "it has no source distribution")
