"""The SVO-to-SOV error analysis of the benchmarks, on hand-made sentences."""

from benchmarks.quality import _main_verb_index, _subject_depth, _svo_outcome


def test_main_verb_and_subject_depth_by_hand():
    # Subject "s1 (r0 s2 (r0 s3 v2) v1)", main verb v3, object "o1": the target moves
    # v3 to the end, so it first differs from the source at index 7.
    source = ["s1", "r0", "s2", "r0", "s3", "v2", "v1", "v3", "o1"]
    target = ["S1", "R0", "S2", "R0", "S3", "V2", "V1", "O1", "V3"]
    assert _main_verb_index(source, target) == 7
    assert _subject_depth(source, 7) == 2


def test_subject_without_relative_clause_has_depth_zero():
    source, target = ["s1", "s2", "v0", "o1", "o2"], ["S1", "S2", "O1", "O2", "V0"]
    assert _main_verb_index(source, target) == 2
    assert _subject_depth(source, 2) == 0


def test_outcomes_by_hand():
    source = ["s1", "r0", "s2", "v1", "v3", "o1"]
    target = ["S1", "R0", "S2", "V1", "O1", "V3"]
    assert _svo_outcome(source, target, target) == ("exact", 1)
    # The subject's relative-clause verb v1 put last instead of the main verb v3.
    assert _svo_outcome(source, target, [*target[:-1], "V1"])[0] == (
        "last word a verb of the subject's relative clauses"
    )
    assert _svo_outcome(source, target, [*target[:-1], "V5"])[0] == "last word another verb"
    assert _svo_outcome(source, target, [*target[:-1], "O1"])[0] == "last word not a verb"
    assert _svo_outcome(source, target, target[:-1])[0] == "last word missing"
    assert _svo_outcome(source, target, ["S1", "S2", *target[2:]])[0] == "wrong earlier"
