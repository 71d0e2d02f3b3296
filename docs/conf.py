"""Sphinx configuration of the skptr documentation."""

import ast
import inspect
import os
import re
import warnings
from pathlib import Path

from sphinx.util import logging

import skptr

project = "skptr"
author = "The skptr developers"
copyright = "The skptr developers"
version = release = skptr.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
root_doc = "index"
default_role = "obj"

# -- API reference --------------------------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False

# A fitted attribute in a type, as in "ndarray of shape (n_features_in_,)", would be
# read by reStructuredText as a link target; escape the trailing underscore there.
_FIELD = re.compile(r"^(\s*\*?\*?\w+\*?\*? : )(.*)$")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[,)\s])")


def _escape_attribute_names_in_types(app, what, name, obj, options, lines):
    for index, line in enumerate(lines):
        match = _FIELD.match(line)
        if match:
            lines[index] = match.group(1) + _TRAILING_UNDERSCORE.sub(r"\\_", match.group(2))


# The hyperparameter tables of the user guide state defaults; check them against the
# estimators' signatures so that the guide cannot drift from the code.
_GUIDE_TABLES = {
    "user_guide/pointer_networks.rst": "PointerNetworkOrderer",
    "user_guide/neural_memories.rst": "NeuralStackTransducer",
}
_TABLE_ROW = re.compile(r"^\s*\* - ((?:``\w+``,\s*)*``\w+``)\s*\n\s*- (.+)$", re.MULTILINE)
_logger = logging.getLogger(__name__)


def _check_documented_defaults(app):
    for page, name in _GUIDE_TABLES.items():
        path = Path(app.srcdir) / page
        defaults = {
            key: parameter.default
            for key, parameter in inspect.signature(getattr(skptr, name)).parameters.items()
        }
        for params, values in _TABLE_ROW.findall(path.read_text(encoding="utf-8")):
            params = [p.strip().strip("`") for p in params.split(",")]
            values = [v.strip().strip("`") for v in values.split(", ")]
            if len(params) != len(values):
                continue
            for param, value in zip(params, values, strict=True):
                try:
                    documented = ast.literal_eval(value)
                except (ValueError, SyntaxError):
                    continue
                if param not in defaults:
                    _logger.warning(f"{page}: {name} has no parameter {param!r}")
                elif documented != defaults[param]:
                    _logger.warning(
                        f"{page}: the default of {name}({param}) is documented as {value}, "
                        f"but it is {defaults[param]!r}"
                    )


def setup(app):
    app.connect("autodoc-process-docstring", _escape_attribute_names_in_types, priority=400)
    app.connect("builder-inited", _check_documented_defaults)


# -- Example gallery ------------------------------------------------------------------
# SKPTR_DOCS_EXAMPLES selects the examples to run (a regular expression matched against
# their paths); the default runs all of them. Examples that are not run are still
# rendered, without their output. SKPTR_DOCS_JOBS examples run at once (default 2, one
# per core of the machines the documentation is built on).
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")

sphinx_gallery_conf = {
    "examples_dirs": str(Path(__file__).parent.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": os.environ.get("SKPTR_DOCS_EXAMPLES", "/plot_"),
    "parallel": int(os.environ.get("SKPTR_DOCS_JOBS", "2")),
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
    "reference_url": {"skptr": None},
    "doc_module": ("skptr",),
    "backreferences_dir": "generated/backreferences",
    "capture_repr": ("_repr_html_", "__repr__"),
    "image_scrapers": ("matplotlib",),
}

# -- HTML -----------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skptr {release}"
html_static_path = []
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}
html_sidebars = {"getting_started": [], "benchmarks": [], "changelog": []}
html_show_sourcelink = False
