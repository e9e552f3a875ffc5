#!/usr/bin/env python3
"""Writes a byte-level BPE tokenizer.json (GPT-2/Llama-3 style pipeline: ByteLevel pre-tokenizer with
the GPT-2 split regex, BPE model, ByteLevel decoder) trained on the project's own docs, for
ModelTokenizerBenchmark: no real model's tokenizer is on this machine and python's `tokenizers` is
not installed, so the merges are learned here by the textbook BPE algorithm (Sennrich et al. 2016).
Usage: scripts/make-bench-bpe-tokenizer.py OUT.json [MERGES]"""
import collections, glob, json, re, sys

out = sys.argv[1]
n_merges = int(sys.argv[2]) if len(sys.argv) > 2 else 4000

def bytes_to_unicode():  # GPT-2's reversible byte <-> printable char table
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, map(chr, cs)))

B2U = bytes_to_unicode()
SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")
text = "".join(open(f, encoding="utf-8").read() for f in sorted(glob.glob("docs/*.md")) + ["README.md"])
words = collections.Counter("".join(B2U[b] for b in w.encode("utf-8")) for w in SPLIT.findall(text))
seqs = {w: list(w) for w in words}
pairs = collections.Counter()
where = collections.defaultdict(set)
for w, s in seqs.items():
    for a, b in zip(s, s[1:]):
        pairs[(a, b)] += words[w]; where[(a, b)].add(w)
merges = []
for _ in range(n_merges):
    if not pairs:
        break
    (a, b), c = pairs.most_common(1)[0]
    if c < 2:
        break
    merges.append((a, b))
    for w in list(where[(a, b)]):
        s = seqs[w]
        for x, y in zip(s, s[1:]):
            pairs[(x, y)] -= words[w]
            if pairs[(x, y)] <= 0:
                del pairs[(x, y)]
        i, t = 0, []
        while i < len(s):
            if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                t.append(a + b); i += 2
            else:
                t.append(s[i]); i += 1
        seqs[w] = t
        for x, y in zip(t, t[1:]):
            pairs[(x, y)] += words[w]; where[(x, y)].add(w)
vocab = {}
for ch in sorted(set(B2U.values())):
    vocab[ch] = len(vocab)
for a, b in merges:
    vocab.setdefault(a + b, len(vocab))
special = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"]
added = []
for s in special:
    vocab[s] = len(vocab)
    added.append({"id": vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": True})
tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
       "post_processor": {"type": "TemplateProcessing",
                          "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                          "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                   {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                          "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [vocab["<|begin_of_text|>"]], "tokens": ["<|begin_of_text|>"]}}},
       "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
       "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                 "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                 "vocab": vocab, "merges": [a + " " + b for a, b in merges]}}
json.dump(tok, open(out, "w", encoding="utf-8"), ensure_ascii=False)
print(f"{out}: {len(vocab)} tokens, {len(merges)} merges from {sum(words.values())} words")
