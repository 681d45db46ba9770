"""Runs the controller checks' self-test (tests/jepsen/test_checker_controller.py) under ctest; no raftns process."""
import os, runpy, sys
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jepsen")
sys.path.insert(0, HERE)
runpy.run_path(os.path.join(HERE, "test_checker_controller.py"), run_name="__main__")
