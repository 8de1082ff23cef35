"""Signatures: one module per scheme, all returning :class:`~neardup.sketch.base.Signature`.

:func:`sign` is the single entry point; ``SCHEMES`` maps a scheme name to its config class
and signing function, so adding a scheme is one line here.  A scheme that reads what a
higher layer computes (the ``"coverage"`` sketch reads the near-duplicate rule's text
profile) registers itself with :func:`register_scheme` from its own module,
:mod:`neardup.rule.coverage`, which ``neardup.sign`` loads; its sketch arithmetic stays
here (:mod:`neardup.sketch.coverage`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

from neardup.config import Config
from neardup.errors import ConfigError
from neardup.sketch.base import Signature, require_same_scheme
from neardup.sketch.bottomk import SentenceSketchConfig, sign_sentences
from neardup.sketch.idf import IdfTable, build_idf_table
from neardup.sketch.minhash import MinHashConfig, estimate_jaccard, sign_minhash
from neardup.sketch.shingleset import (
    ShingleSetConfig,
    SpotSigsConfig,
    sign_shingles,
    sign_spotsigs,
)
from neardup.sketch.simhash import SimHashConfig, hamming_distance, sign_simhash

__all__ = [
    "SCHEMES",
    "IdfTable",
    "MinHashConfig",
    "Scheme",
    "SentenceSketchConfig",
    "ShingleSetConfig",
    "Signature",
    "SimHashConfig",
    "SpotSigsConfig",
    "build_idf_table",
    "estimate_jaccard",
    "hamming_distance",
    "make_config",
    "register_scheme",
    "require_same_scheme",
    "sign",
]


class Scheme(NamedTuple):
    """A signature scheme: its config class and its signing function."""

    config_class: type[Config]
    sign: Callable[[str, Any], Signature]


SCHEMES: dict[str, Scheme] = {
    "sentences": Scheme(SentenceSketchConfig, sign_sentences),
    "shingles": Scheme(ShingleSetConfig, sign_shingles),
    "spotsigs": Scheme(SpotSigsConfig, sign_spotsigs),
    "minhash": Scheme(MinHashConfig, sign_minhash),
    "simhash": Scheme(SimHashConfig, sign_simhash),
}


#: The scheme :func:`sign` uses when none is named: the result-set sketch of the rule.
DEFAULT_SCHEME = "coverage"
#: Where the schemes defined above this layer register themselves.
REGISTERED_BY = {"coverage": "neardup.rule.coverage"}


def register_scheme(name: str, scheme: Scheme) -> None:
    """Make ``scheme`` available to :func:`sign` as ``name`` (idempotent for one scheme)."""
    known = SCHEMES.get(name)
    if known is not None and known != scheme:
        raise ConfigError(f"scheme {name!r} is already registered")
    SCHEMES[name] = scheme


def _unknown(scheme: object) -> ConfigError:
    if isinstance(scheme, str) and scheme in REGISTERED_BY:
        return ConfigError(
            f"scheme {scheme!r} is defined by {REGISTERED_BY[scheme]}: import it (or use "
            "neardup.sign, which does)"
        )
    known = ", ".join(sorted({*SCHEMES, *REGISTERED_BY}))
    return ConfigError(f"unknown scheme {scheme!r}; choose one of {known}")


@lru_cache(maxsize=256)
def _cached_config(scheme: str, items: tuple[tuple[str, Any], ...]) -> Config:
    return SCHEMES[scheme].config_class(**dict(items))


def make_config(scheme: str, **params: Any) -> Config:
    """The validated config of ``scheme`` with ``params`` (cached for hashable params)."""
    if scheme not in SCHEMES:
        raise _unknown(scheme)
    items = tuple(sorted(params.items()))
    try:
        return _cached_config(scheme, items)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise ConfigError(f"scheme {scheme!r}: {exc}") from exc
        if "unhashable" in str(exc):
            return SCHEMES[scheme].config_class(**params)
        raise


def sign(text: str, scheme: str = DEFAULT_SCHEME, /, **params: Any) -> Signature:
    """Sign ``text`` with ``scheme`` and its parameters.

    Schemes: ``"coverage"`` (the default: the result-set sketch that estimates the
    near-duplicate rule's coverages, ``sample_size``, ``max_word_count``, ``rule``; see
    :mod:`neardup.rule.coverage`), ``"sentences"`` (seed 000 sentence sketch, ``k``),
    ``"shingles"`` (exact word
    w-shingle set, ``width``), ``"spotsigs"`` (exact SpotSigs set), ``"minhash"``
    (``num_perm`` values, ``method``, ``width``), ``"simhash"`` (``bits``, ``idf`` table).

    Pure and deterministic: the same text and parameters give the same signature bytes on
    every machine.  Pass ``config=<SchemeConfig>`` to give a ready-made config instead.
    ``text`` is positional-only, so a scheme parameter may itself be called ``text`` (the
    text-stage config); ``scheme`` may be given positionally or as ``scheme=``.
    """
    if "scheme" in params:
        scheme = params.pop("scheme")
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise _unknown(scheme)
    config = params.pop("config", None)
    if config is None:
        config = make_config(scheme, **params)
    elif params:
        raise ConfigError("give either config= or individual parameters, not both")
    elif not isinstance(config, SCHEMES[scheme].config_class):
        raise ConfigError(
            f"config for scheme {scheme!r} must be {SCHEMES[scheme].config_class.__name__}"
        )
    return SCHEMES[scheme].sign(text, config)
