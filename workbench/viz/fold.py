"""Fold big graphs so that a picture stays readable (and quick to lay out).

A graph over the limit (about 150 vertices) is folded in stages, each only if the
previous one did not bring it under the limit, and each leaves a note on the picture:

1. **name scopes**: the vertices recorded inside ``wb.name_scope("layer1")`` become one
   box per scope (the deepest scope level that fits);
2. **attachments**: saved tensors, leaves and constants that touch a single vertex are
   written into that vertex, and collapse-sums become ``Σ`` labels on their edges;
3. **repeated chains**: a long run of vertices one after another (a deep stack of the
   same layers, an unrolled loop) becomes one box saying what repeats, e.g.
   ``40 × [ReluBackward0 → AddBackward0 → MatmulBackward0]``;
4. **the rest**: if still too big, the vertices beyond the limit become one box.

A folded box has ``members``: the node ids inside it, so a step inside it lights it up.

**Opened boxes.** ``fold(model, limit, opened=[...])`` takes the member sets of boxes a
learner opened: their vertices are left out of every stage and drawn one by one, or,
when there are more than ``OPEN_LIMIT`` of them, as a few "part i of k" boxes that
open in turn. A box opened inside another opened box shows its own vertices; the rest
of the outer one stays in parts.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

from .model import RECOMPUTED, Edge, GraphModel, Vertex

FOLD_LIMIT = 150
OPEN_LIMIT = 60  # an opened box shows at most this many vertices; more become parts
MIN_CHAIN = 4  # chains shorter than this stay as they are
ATTACHMENTS = ("saved", "accumulate", "leaf", "const")


def fold(model: GraphModel, limit: int = FOLD_LIMIT, opened=()) -> GraphModel:
    """The model folded to at most about ``limit`` vertices (unchanged if it fits).

    ``opened``: member sets (node ids) of boxes to keep open (see the module's notes).
    The model given is not changed, so it can be folded again with other boxes open.
    """
    if len(model.vertices) <= limit:
        return model
    before = len(model.vertices)
    model = shallow_copy(model)
    keep = open_vertices(model, opened)
    for stage in (fold_scopes, fold_attachments, fold_chains, fold_rest):
        if len(model.vertices) - len(keep) <= limit:
            break
        model = stage(model, limit, keep)
    if keep:
        model = fold_open_parts(model, keep)
    model.notes.insert(0, f"Folded {before} vertices into {len(model.vertices)}:")
    return model


def shallow_copy(model: GraphModel) -> GraphModel:
    """A model of its own (dicts and lists), sharing the vertices, which folding only reads."""
    return GraphModel(
        model.kind,
        dict(model.vertices),
        list(model.edges),
        list(model.order),
        list(model.notes),
        model.title,
    )


def open_vertices(model: GraphModel, opened) -> dict:
    """``vertex id -> the innermost opened set holding one of its members``, as an index."""
    sets = sorted((frozenset(s) for s in opened), key=len)  # smallest (innermost) first
    keep = {}
    for vid, vertex in model.vertices.items():
        for index, members in enumerate(sets):
            if members.intersection(vertex.members):
                keep[vid] = index
                break
    return keep


def fold_open_parts(model: GraphModel, keep: dict) -> GraphModel:
    """Each opened set's vertices one by one, or in parts when there are too many."""
    by_set: dict = {}
    for vid, index in keep.items():
        if vid in model.vertices:
            by_set.setdefault(index, []).append(vid)
    groups = {}
    for index, vids in by_set.items():
        if len(vids) <= OPEN_LIMIT:
            continue
        parts = math.ceil(len(vids) / OPEN_LIMIT)
        size = math.ceil(len(vids) / parts)
        for k, vid in enumerate(vids):
            groups[vid] = (index, k // size, parts)
    if not groups:
        return model

    def make(key, vertices):
        index, part, parts = key
        return fold_vertex(f"open{index}.part{part + 1}", f"part {part + 1} of {parts}", vertices)

    return contract(model, groups, make)


# ------------------------------------------------------------- contraction
def contract(model: GraphModel, groups: dict, make) -> GraphModel:
    """Replace each group of vertices by one vertex ``make(group_key, members)``.

    ``groups`` maps a vertex id to its group key; ungrouped vertices stay. Edges are
    redirected to the group vertex; edges inside a group and repeats are dropped.
    """
    members: dict = {}
    for vid, key in groups.items():
        members.setdefault(key, []).append(model.vertices[vid])
    new = GraphModel(model.kind, order=model.order, notes=list(model.notes), title=model.title)
    placed = {}
    for vertex in model.vertices.values():
        key = groups.get(vertex.id)
        if key is None:
            new.add(vertex)
        elif key not in placed:
            placed[key] = new.add(make(key, members[key]))
    kept: dict = {}  # (tail, head) -> the one edge drawn for them
    for edge in model.edges:
        tail = placed[groups[edge.tail]].id if edge.tail in groups else edge.tail
        head = placed[groups[edge.head]].id if edge.head in groups else edge.head
        if tail == head:
            continue
        if (tail, head) in kept:  # a repeat: its gradients take the edge drawn, any shape
            if kept[tail, head].shape != edge.shape:
                kept[tail, head].shape = None
            continue
        kept[tail, head] = Edge(tail, head, edge.label, edge.kind, shape=edge.shape)
        new.edges.append(kept[tail, head])
    return new


def fold_vertex(vid: str, title: str, vertices: list) -> Vertex:
    """A box standing for ``vertices``: a title and what is inside."""
    node_ids = tuple(dict.fromkeys(m for v in vertices for m in v.members))
    lines = [title, summary_text([short_name(v) for v in vertices])]
    box = Vertex(vid, "fold", lines, members=node_ids, tooltip=", ".join(node_ids[:20]))
    segments = {v.segment for v in vertices}
    if len(segments) == 1:  # a box inside one checkpoint segment stays inside its frame
        box.segment = segments.pop()
    recomputed = sum(RECOMPUTED in v.classes for v in vertices)
    if recomputed:  # keep the mark a picture of checkpointing is about
        box.classes.append(RECOMPUTED)
        box.lines.append(f"↻ {recomputed} recomputed node" + ("s" if recomputed > 1 else ""))
    return box


def short_name(vertex: Vertex) -> str:
    """What kind of thing a vertex is, for summaries: a node's name, else its kind."""
    if vertex.kind in ("backward", "op", "accumulate", "fold"):
        return vertex.lines[0]
    return vertex.kind


def summary_text(names: list) -> str:
    """``"A → 40 × [B → C]"`` for a run that repeats, else the commonest names with counts."""
    for start in range(min(3, len(names))):
        period = repeating_period(names[start:])
        if period is not None:
            body = names[start:]
            times, rest = divmod(len(body), period)
            text = f"{times} × [{' → '.join(body[:period])}]"
            head = " → ".join(names[:start])
            tail = " → ".join(body[times * period :])
            return " → ".join(part for part in (head, text, tail) if part)
    counts = Counter(names).most_common(3)
    text = ", ".join(f"{n} {name}" for name, n in counts)
    others = len(names) - sum(n for _, n in counts)
    return f"{len(names)} vertices: {text}" + (f", {others} others" if others else "")


def repeating_period(names: list, longest: int = 8) -> int | None:
    """The shortest p such that ``names`` is a block of p names repeated (at least twice).

    A last, incomplete block is allowed: ``A B A B A`` has period 2.
    """
    for p in range(1, min(longest, len(names) // 2) + 1):
        if all(names[i] == names[i + p] for i in range(len(names) - p)):
            return p
    return None


# --------------------------------------------------------------- stages
def fold_scopes(model: GraphModel, limit: int, keep=()) -> GraphModel:
    """One box per name scope, at the deepest scope level that fits under the limit."""
    scoped = [v for v in model.vertices.values() if v.scope and v.id not in keep]
    if not scoped:
        return model
    best = None
    for depth in range(max(len(v.scope) for v in scoped), 0, -1):
        groups = _scope_groups(scoped, depth)
        folded = len(model.vertices) - len(groups) + len(set(groups.values()))
        best = (depth, groups)
        if folded <= limit:
            break
    depth, groups = best
    new = contract(model, groups, lambda key, vs: fold_vertex(key, key[len("scope:") :], vs))
    boxes = len(set(groups.values()))
    new.notes.append(f"- {len(groups)} vertices folded into {boxes} name-scope boxes")
    return new


def _scope_groups(scoped: list, depth: int) -> dict:
    groups = {v.id: "scope:" + "/".join(v.scope[:depth]) for v in scoped}
    sizes = Counter(groups.values())
    return {vid: key for vid, key in groups.items() if sizes[key] > 1}


def fold_attachments(model: GraphModel, limit: int, keep=()) -> GraphModel:
    """Write small side boxes into their only neighbour; collapse-sums become edge labels."""
    new = shallow_copy(_collapse_sums_on_edges(model))
    neighbours: dict = {}
    for edge in new.edges:
        neighbours.setdefault(edge.tail, []).append(edge.head)
        neighbours.setdefault(edge.head, []).append(edge.tail)
    hosts: dict = {}
    for vertex in new.vertices.values():
        near = neighbours.get(vertex.id, [])
        if vertex.id in keep:
            continue
        if vertex.kind in ATTACHMENTS and len(near) == 1 and near[0] in new.vertices:
            host = new.vertices[near[0]]
            if host.kind not in ATTACHMENTS:
                hosts.setdefault(host.id, []).append(vertex)
    if not hosts:
        return new
    gone = {v.id for vs in hosts.values() for v in vs}
    for host_id, attached in hosts.items():
        host = new.vertices[host_id] = dataclasses.replace(new.vertices[host_id])  # its own copy
        host.members = tuple(
            dict.fromkeys([*host.members, *(m for v in attached for m in v.members)])
        )
        host.lines = [*host.lines, _attached_line(attached)]
    new.vertices = {vid: v for vid, v in new.vertices.items() if vid not in gone}
    new.edges = [e for e in new.edges if e.tail not in gone and e.head not in gone]
    new.notes.append(f"- {len(gone)} saved tensors, leaves and constants written into their nodes")
    return new


def _attached_line(attached: list) -> str:
    names = [
        v.lines[0] if v.kind == "saved" else f"{short_name(v)} {v.lines[-1]}" for v in attached
    ]
    shown = names[:3] + ([f"{len(names) - 3} more"] if len(names) > 3 else [])
    return "+ " + "; ".join(shown)


def _collapse_sums_on_edges(model: GraphModel) -> GraphModel:
    collapses = {vid for vid, v in model.vertices.items() if v.kind == "collapse"}
    if not collapses:
        return model
    into = {e.head: e for e in model.edges if e.head in collapses}
    new = GraphModel(model.kind, order=model.order, notes=list(model.notes), title=model.title)
    new.vertices = {vid: v for vid, v in model.vertices.items() if vid not in collapses}
    for edge in model.edges:
        if edge.head in collapses:
            continue
        if edge.tail in collapses:
            vertex = model.vertices[edge.tail]
            tail = into[edge.tail].tail if edge.tail in into else None
            if tail is None:
                continue
            label = f"Σ{vertex.lines[1].split('axes', 1)[-1].strip()} {edge.label}".strip()
            new.edges.append(Edge(tail, edge.head, label, edge.kind, shape=edge.shape))
            continue
        new.edges.append(edge)
    new.notes.append(f"- {len(collapses)} collapse-sums shown as Σ(axes) on their edges")
    return new


def fold_chains(model: GraphModel, limit: int, keep=()) -> GraphModel:
    """Fold the inside of every long one-after-another run of vertices (none kept open)."""
    outs: dict = {}
    ins: dict = {}
    for edge in model.edges:
        if edge.tail in keep or edge.head in keep:
            continue  # an open vertex breaks the chain
        outs.setdefault(edge.tail, set()).add(edge.head)
        ins.setdefault(edge.head, set()).add(edge.tail)

    def linked(a: str, b: str) -> bool:
        return outs.get(a) == {b} and ins.get(b) == {a}

    groups = {}
    count = 0
    for vid in model.vertices:
        if vid in keep:
            continue
        before = ins.get(vid, set())
        if len(before) == 1 and linked(next(iter(before)), vid):
            continue  # not the start of a chain
        chain = [vid]
        while len(outs.get(chain[-1], ())) == 1 and linked(chain[-1], next(iter(outs[chain[-1]]))):
            chain.append(next(iter(outs[chain[-1]])))
        if len(chain) >= MIN_CHAIN:
            count += 1
            for inner in chain[1:-1]:
                groups[inner] = f"chain{count}"
    if not groups:
        return model
    new = contract(model, groups, lambda key, vs: fold_vertex(key, "folded chain", vs))
    new.notes.append(f"- {len(groups)} vertices of {count} long chain(s) folded into one box each")
    return new


def fold_rest(model: GraphModel, limit: int, keep=()) -> GraphModel:
    """Keep the first ``limit - 1`` vertices; fold all the others into one box."""
    ids = [vid for vid in model.vertices if vid not in keep]
    groups = {vid: "rest" for vid in ids[limit - 1 :]}
    new = contract(model, groups, lambda key, vs: fold_vertex(key, "more of the graph", vs))
    new.notes.append(f"- the last {len(groups)} vertices folded into one box")
    return new
