# make demo : venv + editable install, then run gemm through the CLI and print the report
# make test : venv + editable install, then the test suite
# make browser-test : JupyterLab driven by headless Chromium (scripts/browser_test.py;
#   installs playwright + jupyterlab into the venv and Debian's chromium when missing;
#   exit 2 from the script = could not set up: reported, not a failure)
# The venv is (re)installed only when pyproject.toml changes (stamp file).

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.polymagic-installed

.PHONY: demo test browser-test clean-venv

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VPY) -m polymagic run examples/gemm.c --size N=200

test: $(STAMP)
	$(VPY) -m pytest -q tests

browser-test: $(STAMP)
	@rc=0; timeout 1800 $(VPY) scripts/browser_test.py || rc=$$?; \
	if [ $$rc -eq 2 ]; then echo "browser-test: SKIPPED (could not set up, see above)"; \
	elif [ $$rc -ne 0 ]; then echo "browser-test: FAILED ($$rc)"; exit 1; fi

clean-venv:
	rm -rf $(VENV)
