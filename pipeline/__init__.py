# The one import name is ``tgms`` (tgms/__init__.py). A top-level ``pipeline`` (importable only from the
# repository's root, where the folder sits on the path) would be a second copy of every module, with
# registries and classes of its own: refused at once rather than failing somewhere later.
if __name__ != "tgms.pipeline":
    raise ImportError(f"import tgms.pipeline, not {__name__}: the project installs one package, tgms")
