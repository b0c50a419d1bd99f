# The whole set-up from a fresh checkout is two commands:
#   make demo   runs the main job
#   make test   runs the whole test suite
# (make test-fast runs the tests that start no broker, ZooKeeper, Spark or other process: a quick loop)
# Both create (and then reuse) a virtual environment in .venv and install the project into it.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check --quiet
PYTEST_ARGS ?=
C_SOURCES := spark_kafka_source/_fastdecode.c broker/records/_crc32c.c broker/records/_recordwalk.c broker/records/recordwalk.h

.PHONY: demo test test-fast lint bench docs notebook notebook-plot clean

$(PY):
	$(PYTHON) -c 'import sys; sys.exit("Python >= 3.10 is required, found " + sys.version.split()[0]) if sys.version_info < (3, 10) else None'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

$(VENV)/.runtime-installed: $(PY) setup.cfg Makefile setup.py pyproject.toml $(C_SOURCES)
	$(PIP) install --config-settings editable_mode=compat -e .
	touch $@

$(VENV)/.test-installed: $(PY) setup.cfg Makefile setup.py pyproject.toml $(C_SOURCES)
	$(PIP) install --config-settings editable_mode=compat -e '.[test]'
	touch $@

$(VENV)/.notebook-installed: $(PY) setup.cfg Makefile setup.py pyproject.toml $(C_SOURCES)
	$(PIP) install --config-settings editable_mode=compat -e '.[notebook]'
	touch $@

demo: $(VENV)/.runtime-installed
	$(PY) -m spark_kafka_source.java
	$(PY) -m jobs.demo

# the lint and the manual's build first: a change that breaks either fails the suite too
test: lint docs
	$(PY) -m spark_kafka_source.java
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: $(VENV)/.test-installed
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

# ruff (rules and formatting) and mypy, configured in pyproject.toml
lint: $(VENV)/.test-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(VENV)/.test-installed
	$(PY) -m spark_kafka_source.java
	$(PY) -m benchmarks.run_all

# the manual (docs/, mkdocs.yml) as a site in site/; any warning (a broken link or anchor) fails it
docs: $(VENV)/.test-installed
	$(VENV)/bin/mkdocs build --strict --site-dir site

# the notebook in JupyterLab, with what it needs (the notebook extra)
notebook: $(VENV)/.notebook-installed
	$(PY) -m spark_kafka_source.java
	$(VENV)/bin/jupyter lab notebooks/explore.ipynb

# the notebook's first plot, from a real run, as the PNG the README shows
notebook-plot: $(VENV)/.test-installed
	$(PY) -m spark_kafka_source.java
	$(PY) notebooks/render_plot.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache build site spark_kafka_source/*.so broker/records/*.so
