"""Operators grouped by attention kind within a family: a family whose records hold several
attention kinds (T5: encoder self-attention, decoder blocks, cross-attention) is shown as one
group per kind, labelled ``t5 (encoder-self)``, ``t5 (decoder-self-block)``, ``t5 (cross)``, so
that no table, figure or layer x head view pools operators of different kinds (an encoder's
layer 0 with a decoder's layer 0).  A family with a single kind keeps its label unchanged."""

from __future__ import annotations


def kind_labels(rows: list[dict], family: str = "family", attention: str = "attention") -> dict[str, str]:
    """record id -> its group's label, for every row that has a record id."""
    kinds: dict[str, set] = {}
    for r in rows:
        kinds.setdefault(r.get(family) or "", set()).add(r.get(attention))
    out = {}
    for r in rows:
        fam, kind = r.get(family) or "", r.get(attention)
        several = len({k for k in kinds[fam] if k}) > 1
        out[r.get("record_id")] = f"{fam} ({kind})" if several and kind else fam
    return out


def by_kind(rows: list[dict], others: list[dict] = ()) -> tuple[list[dict], list[dict]]:
    """Copies of ``rows`` (which carry ``attention``) and of ``others`` (rows of the same records,
    ``verdicts`` say) with ``family`` the group's label; rows of single-kind families unchanged."""
    labels = kind_labels(rows)

    def relabel(table):
        return [r if labels.get(r.get("record_id"), r.get("family")) == r.get("family")
                else {**r, "family": labels[r.get("record_id")]} for r in table]
    return relabel(rows), relabel(list(others))


# The support kind of an operator, derived from its attention kind (provenance ``attention``; no
# table column): a decoder's native causal self-attention ("decoder-self", ``operators="native"``)
# is a masked record whose support is causal (a sliding window, if the model has one, is part of
# that causal support); every other kind (encoder, cross, common-prefix blocks) has full support.
NATIVE = "decoder-self"
NATIVE_NOTE = ("Native causal operators (support: causal) are the causal self-attention the decoder applies, "
               "with its mask.  Their validated brackets measure r_eps of that operator and are proved like any "
               "other, but they are not applications of the rank theorem: the theorem assumes one common positive "
               "support, which a causal operator lacks; for a decoder it applies to the common-prefix blocks "
               "(support: full), shown beside them.")


def support_kind(attention) -> str:
    """``"causal"`` for a native decoder self-attention operator, ``"full"`` otherwise."""
    return "causal" if attention == NATIVE else "full"


NEAR_UNIFORM = ("every operator's validated bracket is [1, 1] at every eps: near-uniform attention, as a randomly "
                "initialised (untrained) model gives; these ranks say nothing about a trained model")


def near_uniform(rows: list[dict]) -> list[str]:
    """The families (labels, by attention kind) whose every replayed operator (wider than one key)
    has the validated bracket [1, 1] at every tolerance: near-uniform attention, the mark of a
    randomly initialised model (trained heads are not all rank one within eps)."""
    groups: dict[str, list[dict]] = {}
    for r in by_kind(rows)[0]:
        if r.get("status", "ok") == "ok" and (r.get("N") or 2) > 1:
            groups.setdefault(r.get("family") or "", []).append(r)
    return [fam for fam, sel in sorted(groups.items())
            if sel and all(_int(r.get("validated_lower")) == 1 == _int(r.get("validated_upper")) for r in sel)]


def _int(value):
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None
