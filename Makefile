# make demo : venv + editable install, then run gemm through the CLI and print the report
# make test : venv + editable install, then the test suite
# The venv is (re)installed only when pyproject.toml changes (stamp file).

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.polymagic-installed

.PHONY: demo test clean-venv

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VPY) -m polymagic run examples/gemm.c --size N=200

test: $(STAMP)
	$(VPY) -m pytest -q tests

clean-venv:
	rm -rf $(VENV)
