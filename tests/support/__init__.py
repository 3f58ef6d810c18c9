"""Helpers shared by the test suites: fakes for pure-logic tests, launchers for real parts."""
