"""Stopword lists for the languages loremap indexes notes in.

Words this common carry no signal for BM25 and only bloat the index, so the analyzer drops them
from the *part* tokens it emits (compound identifier tokens are never dropped). The lists are the
Snowball ones, written out already folded the way the analyzer folds text: accents removed,
ASCII lowercase ("não" -> "nao", "está" -> "esta"), so a lookup needs no normalisation.

English contractions ("don't", "isn't", "we'll") reach the analyzer as their pieces, because an
apostrophe separates words; the pieces that mean nothing alone ("don", "isn", "ll") are listed in
place of the contractions. "re" (from "we're") is left out on purpose: it is Python's regex module.
"""

from __future__ import annotations

from collections.abc import Sequence

ENGLISH: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing would should could ought cannot a an the and but if or because as until while of at
    by for with about against between into through during before after above below to from up
    down in out on off over under again further then once here there when where why how all
    any both each few more most other some such no nor not only own same so than too very
    isn aren wasn weren hasn haven hadn doesn don didn won wouldn shan shouldn couldn mustn
    ll ve
    """.split()
)

PORTUGUESE: frozenset[str] = frozenset(
    """
    de a o que e do da em um para com nao uma os no se na por mais as dos como mas ao ele das
    seu sua ou quando muito nos ja eu tambem so pelo pela ate isso ela entre depois sem mesmo
    aos seus quem nas me esse eles voce essa num nem suas meu minha numa pelos elas qual lhe
    deles essas esses pelas este dele tu te voces vos lhes meus minhas teu tua teus tuas nosso
    nossa nossos nossas dela delas esta estes estas aquele aquela aqueles aquelas isto aquilo
    estou estamos estao estive esteve estivemos estiveram estava estavamos estavam estivera
    estiveramos esteja estejamos estejam estivesse estivessemos estivessem estiver estivermos
    estiverem hei ha havemos hao houve houvemos houveram houvera houveramos haja hajamos hajam
    houvesse houvessemos houvessem houver houvermos houverem houverei houvera houveremos
    houverao houveria houveriamos houveriam sou somos sao era eramos eram fui foi fomos foram
    fora foramos seja sejamos sejam fosse fossemos fossem for formos forem serei sera seremos
    serao seria seriamos seriam tenho tem temos tinha tinhamos tinham tive teve tivemos
    tiveram tivera tiveramos tenha tenhamos tenham tivesse tivessemos tivessem tiver tivermos
    tiverem terei tera teremos terao teria teriamos teriam
    """.split()
)

SPANISH: frozenset[str] = frozenset(
    """
    de la que el en y a los del se las por un para con no una su al lo como mas pero sus le ya
    o este si porque esta entre cuando muy sin sobre tambien me hasta hay donde quien desde
    todo nos durante todos uno les ni contra otros ese eso ante ellos e esto mi antes algunos
    que unos yo otro otras otra el tanto esa estos mucho quienes nada muchos cual poco ella
    estar estas algunas algo nosotros mis tu te ti tus ellas nosotras vosotros vosotras os mio
    mia mios mias tuyo tuya tuyos tuyas suyo suya suyos suyas nuestro nuestra nuestros
    nuestras vuestro vuestra vuestros vuestras esos esas estoy estas estamos estais estan este
    estes estemos esteis esten estare estaras estara estaremos estareis estaran estaria
    estarias estariamos estariais estarian estaba estabas estabamos estabais estaban estuve
    estuviste estuvo estuvimos estuvisteis estuvieron estuviera estuvieras estuvieramos
    estuvierais estuvieran estuviese estuvieses estuviesemos estuvieseis estuviesen estando
    estado estada estados estadas estad he has ha hemos habeis han haya hayas hayamos hayais
    hayan habre habras habra habremos habreis habran habria habrias habriamos habriais habrian
    habia habias habiamos habiais habian hube hubiste hubo hubimos hubisteis hubieron hubiera
    hubieras hubieramos hubierais hubieran hubiese hubieses hubiesemos hubieseis hubiesen
    habiendo habido habida habidos habidas soy eres es somos sois son sea seas seamos seais
    sean sere seras sera seremos sereis seran seria serias seriamos seriais serian era eras
    eramos erais eran fui fuiste fue fuimos fuisteis fueron fuera fueras fueramos fuerais
    fueran fuese fueses fuesemos fueseis fuesen siendo sido tengo tienes tiene tenemos teneis
    tienen tenga tengas tengamos tengais tengan tendre tendras tendra tendremos tendreis
    tendran tendria tendrias tendriamos tendriais tendrian tenia tenias teniamos teniais
    tenian tuve tuviste tuvo tuvimos tuvisteis tuvieron tuviera tuvieras tuvieramos
    tuvierais tuvieran tuviese tuvieses tuviesemos tuvieseis tuviesen teniendo tenido tenida
    tenidos tenidas tened
    """.split()
)

STOPWORDS: dict[str, frozenset[str]] = {"en": ENGLISH, "pt": PORTUGUESE, "es": SPANISH}

# Snowball's own names for the same languages, so a language given to the stemmer by its full
# name ("portuguese") gets the same stopwords as its code ("pt").
_ALIASES: dict[str, str] = {"english": "en", "portuguese": "pt", "spanish": "es"}


def stopwords_for(languages: Sequence[str]) -> frozenset[str]:
    """Return the union of the stopwords of `languages` (codes or Snowball names).

    A language without a list here (e.g. "de") contributes nothing; it is not an error, because
    stemming may still be available for it.
    """
    words: set[str] = set()
    for language in languages:
        key = language.strip().lower()
        words |= STOPWORDS.get(_ALIASES.get(key, key), frozenset())
    return frozenset(words)
