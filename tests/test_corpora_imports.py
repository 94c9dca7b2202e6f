"""The data layer stays a leaf: importing it loads none of the project's other layers nor the heavy
libraries its readers use."""

from __future__ import annotations

import subprocess
import sys

from corpora.paths import REPO_ROOT


def test_importing_corpora_is_cheap_and_imports_no_other_layer():
    code = (
        "import sys, corpora, corpora.cache, corpora.lm_corpus, corpora.wsj, corpora.wordnet\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('models', 'probes', 'viz', 'app_pages', 'streamlit', 'nltk', 'pandas', 'torch', 'sklearn')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
