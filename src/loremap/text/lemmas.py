"""English irregular verb forms, mapped to the verb they come from before stemming.

Snowball's English stemmer strips regular endings ("writes", "writing" -> write) but leaves an
irregular form as it is: "written" never meets "write", "went" never meets "go", "built" never
meets "build" (and "goes" becomes "goe"). A question asks in one tense and the text answers in
another ("how are notes written" over `write_atomic`; "when did she go" over "I went"), so the
analyzer maps these forms to their verb first, at index and query time alike.

Left out: forms that are more often another word ("left" a side, "bound" a limit, "bit", "lit",
"shot", "sat", "meant" beside a mean, "stuck", "bore"), and forms whose verb is a stopword
("did", "done", "had", "was"), which would vanish. Measured on LoCoMo, CoSQA and SWE-bench:
docs/search.md.
"""

from __future__ import annotations

# base: its irregular forms (past tense, past participle) that the stemmer does not reduce
_FORMS = """
arise arose arisen; awake awoke awoken; bear borne; beat beaten; become became; begin began begun;
bend bent; bleed bled; blow blew blown; break broke broken; breed bred; bring brought;
build built; burn burnt; buy bought; catch caught; choose chose chosen; cling clung;
come came; creep crept; deal dealt; dig dug; draw drew drawn; dream dreamt; drink drank drunk;
drive drove driven; dwell dwelt; eat ate eaten; fall fell fallen; feed fed; feel felt;
fight fought; find found; flee fled; fling flung; fly flew flown; forbid forbade forbidden;
forget forgot forgotten; forgive forgave forgiven; freeze froze frozen; get got gotten;
give gave given; go went gone goes; grow grew grown; hang hung; hear heard; hide hid hidden;
hold held; keep kept; kneel knelt; know knew known; lay laid; lead led; leap leapt;
learn learnt; lend lent; lose lost; make made; meet met; mistake mistook mistaken;
overcome overcame; override overrode overridden; overwrite overwrote overwritten;
pay paid; prove proven; rebuild rebuilt; redo redid redone; rerun reran; rewrite rewrote rewritten;
ride rode ridden; ring rang rung; rise rose risen; run ran; see saw seen; seek sought;
sell sold; send sent; shake shook shaken; show shown; shrink shrank shrunk; sing sang sung;
sink sank sunk; sleep slept; slide slid; sling slung; speak spoke spoken; speed sped;
spend spent; spin spun; spring sprang sprung; stand stood; steal stole stolen; sting stung;
stink stank stunk; strike struck stricken; strive strove striven; swear swore sworn;
sweep swept; swim swam swum; swing swung; take took taken; teach taught; tear tore torn;
tell told; think thought; throw threw thrown; tread trod trodden; undergo underwent undergone;
understand understood; undo undid undone; uphold upheld; wake woke woken; wear wore worn;
weave wove woven; weep wept; withdraw withdrew withdrawn; withhold withheld; wring wrung;
write wrote written; say said
"""

IRREGULAR: dict[str, str] = {
    form: entry.split()[0]
    for entry in _FORMS.split(";") for form in entry.split()[1:]
}
