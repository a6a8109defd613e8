"""Review of findings: who acknowledged or resolved a finding, at which amount, and what it leaves
unexplained. Pure rules (``rules``, ``limits``, ``render``) apart from the database reads and writes
(``store``); the `recon findings` commands and the asset checks are thin callers of both.
"""
