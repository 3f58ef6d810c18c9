"""Unit tests (no Qt), in folders that mirror the package: a module of ``imprint_desktop/core/X/``
is tested in ``X/`` here, a module directly under ``core/`` at the top (``test_<module>.py``), and
``settings/``, ``background/`` and ``commands/`` (with ``cli.py``) in folders of their own. The
check of ``scripts/system-deps.sh`` is at the top too.
"""
