# The one import name is ``tgms`` (tgms/__init__.py). A top-level ``engine`` (importable only from the
# repository's root, where the folder sits on the path) would be a second copy of every module, with
# registries and classes of its own: refused at once rather than failing somewhere later.
if __name__ != "tgms.engine":
    raise ImportError(f"import tgms.engine, not {__name__}: the project installs one package, tgms")
