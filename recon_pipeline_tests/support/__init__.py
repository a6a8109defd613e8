"""The tests' one support package: builders, fixtures and process harnesses the test modules share (a test
module imports from here, never from another test module)."""
