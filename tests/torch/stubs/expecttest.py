"""A stand-in for the expecttest package, which PyTorch's test utilities import and no registry
reachable here offers: the two names torch.testing._internal.common_utils uses. Inline expectations
compare exactly (no --accept rewriting). For tests/torch/dist_suite.py only."""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802 (expecttest's name)
        self.assertEqual(actual, expect)
