# make demo : venv + editable install, then run gemm through the CLI and print the report
# make test : venv + editable install, then the test suite
# make lab  : venv + JupyterLab (the `lab` extra), then JupyterLab on notebooks/
#   (LAB_ARGS="--port=8899 --no-browser" passes options to it)
# make docs : venv + the `docs` extra, the notebooks executed into docs/notebooks/, then
#   the Sphinx site into docs/_build/html with warnings as errors
# make docs-browser-test : the built site's start page and a notebook page in headless
#   Chromium (scripts/docs_browser_test.py; exit 2 = could not set up: reported, not a failure)
# make browser-test : JupyterLab driven by headless Chromium (scripts/browser_test.py;
#   installs playwright + jupyterlab into the venv and Debian's chromium when missing;
#   exit 2 from the script = could not set up: reported, not a failure)
# The venv is (re)installed only when pyproject.toml changes (stamp file).

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.polymagic-installed
LAB_STAMP  := $(VENV)/.polymagic-lab-installed
DOCS_STAMP := $(VENV)/.polymagic-docs-installed
LAB_ARGS ?=
# JupyterLab refuses to run as root without --allow-root (containers, CI)
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: demo test lab docs docs-browser-test browser-test clean-venv

$(STAMP): pyproject.toml
	@echo "set-up: installing polymagic and its dependencies (islpy-barvinok, numpy, scipy,"
	@echo "        ipython, ipywidgets, matplotlib, the NVRTC wheel; the test extra: pytest,"
	@echo "        nbclient, ipykernel, nvdisasm) into $(VENV); the first time takes a few minutes"
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install --progress-bar off -e '.[test]'
	touch $(STAMP)

$(LAB_STAMP): $(STAMP)
	@echo "set-up: installing JupyterLab (the lab extra) into $(VENV)"
	$(VPY) -m pip install --progress-bar off -e '.[test,lab]'
	touch $(LAB_STAMP)

$(DOCS_STAMP): $(STAMP)
	@echo "set-up: installing Sphinx, myst-nb and the Furo theme (the docs extra) into $(VENV)"
	$(VPY) -m pip install --progress-bar off -e '.[test,docs]'
	touch $(DOCS_STAMP)

lab: $(LAB_STAMP)
	@echo "lab: starting JupyterLab on notebooks/ (open the http://127.0.0.1:...?token=... address it prints; Ctrl-C stops it)"
	$(VPY) -m jupyterlab --ServerApp.root_dir=notebooks $(ALLOW_ROOT) $(LAB_ARGS)

docs: $(DOCS_STAMP)
	$(VPY) docs/_ext/notebook_sources.py
	$(VPY) -m sphinx -W --keep-going -b html docs docs/_build/html
	@echo "docs: built; open docs/_build/html/index.html"

docs-browser-test: $(DOCS_STAMP)
	@rc=0; timeout 1200 $(VPY) scripts/docs_browser_test.py || rc=$$?; \
	if [ $$rc -eq 2 ]; then echo "docs-browser-test: SKIPPED (could not set up, see above)"; \
	elif [ $$rc -ne 0 ]; then echo "docs-browser-test: FAILED ($$rc)"; exit 1; fi

demo: $(STAMP)
	$(VPY) -m polymagic run examples/gemm.c --size N=200

# --dist worksteal: each worker starts on a contiguous half of the tests (a file's
# tests share their compiles and module fixtures in one process; xdist's default
# sends neighbouring tests to alternate workers) and an idle worker takes the tail
# of the other's queue (docs/testing.md).  PYTHONDONTWRITEBYTECODE emptied: where the
# environment sets it, every xdist worker, notebook kernel and CLI subprocess compiled
# polymagic and re-rewrote the test modules' asserts from source (collection: 6.8
# CPU s a worker against 3.3; a notebook kernel's imports 2.0 s against 1.2); the
# caches go to the ignored __pycache__
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(VPY) -m pytest -q -n auto --dist worksteal tests

browser-test: $(STAMP)
	@echo "browser-test: needs playwright and jupyterlab (pip, into $(VENV)) and Chromium (Debian's"
	@echo "              chromium via apt-get, about 130 system packages); it says which are missing first"
	@rc=0; timeout 1800 $(VPY) scripts/browser_test.py || rc=$$?; \
	if [ $$rc -eq 2 ]; then echo "browser-test: SKIPPED (could not set up, see above)"; \
	elif [ $$rc -ne 0 ]; then echo "browser-test: FAILED ($$rc)"; exit 1; fi

clean-venv:
	rm -rf $(VENV)
