#!/usr/bin/env python3
"""Generates nb_sort9 and nb_median27 for kernels/neighbourhood.kernel (the 3x3x3 median) and
checks them: the sort with the 0-1 principle on all 512 inputs, the merge on every pair of sorted
0-1 runs, the median against a plain sort on random data. Prints the C code to paste; with
`--check KERNEL` it instead fails unless KERNEL holds that code verbatim (test_median_networks
runs it on kernels/neighbourhood.kernel, so the kernel cannot drift from its generator)."""
import itertools, random, sys
INF=float('inf')
def oddeven_merge(lo, hi, r):
    step = r * 2
    if step < hi - lo:
        yield from oddeven_merge(lo, hi, step)
        yield from oddeven_merge(lo + r, hi, step)
        yield from [(i, i + r) for i in range(lo + r, hi - r, step)]
    else:
        yield (lo, lo + r)
def oddeven_merge_sort_range(lo, hi):
    if (hi - lo) >= 1:
        mid = lo + ((hi - lo) // 2)
        yield from oddeven_merge_sort_range(lo, mid)
        yield from oddeven_merge_sort_range(mid + 1, hi)
        yield from oddeven_merge(lo, hi, 1)
def simplify(net, n, known_inf, outputs):
    # wires: list of symbolic names per position; known-inf positions carry 'INF'
    pos=[('in',i) if i not in known_inf else 'INF' for i in range(n)]
    ops=[]  # (dst_lo, dst_hi, a, b) : lo=min(a,b), hi=max(a,b) fresh temporaries
    cnt=[0]
    for (i,j) in net:
        a,b=pos[i],pos[j]
        if b=='INF': continue
        if a=='INF': pos[i],pos[j]=b,'INF'; continue
        lo=('t',cnt[0]); hi=('t',cnt[0]+1); cnt[0]+=2
        ops.append((lo,hi,a,b)); pos[i],pos[j]=lo,hi
    # backward pruning
    need=set(pos[o] for o in outputs)
    kept=[]
    for op in reversed(ops):
        lo,hi,a,b=op
        use_lo=lo in need; use_hi=hi in need
        if use_lo or use_hi:
            kept.append((lo if use_lo else None, hi if use_hi else None,a,b)); need.add(a); need.add(b)
    kept.reverse()
    return kept,[pos[o] for o in outputs]
def run(ops,outs,inputs):
    env={('in',i):v for i,v in enumerate(inputs)}
    for lo,hi,a,b in ops:
        if lo: env[lo]=min(env[a],env[b])
        if hi: env[hi]=max(env[a],env[b])
    return [env[o] for o in outs]
# sort 9 (padded to 16)
net=list(oddeven_merge_sort_range(0,15))
sort9,sort9_out=simplify(net,16,set(range(9,16)),list(range(9)))
for bits in itertools.product([0,1],repeat=9):
    assert run(sort9,sort9_out,list(bits)+[INF]*7)==sorted(bits)
# merge two sorted 9s: A at 0..8 (pad 9..15), B at 16..24 (pad 25..31); outputs 4..13 (X_5..X_14)
mnet=list(oddeven_merge(0,31,1))
merge,merge_out=simplify(mnet,32,set(range(9,16))|set(range(25,32)),list(range(4,14)))
for na in range(10):
  for nb in range(10):
    A=[0]*(9-na)+[1]*na; B=[0]*(9-nb)+[1]*nb
    X=sorted(A+B)
    assert run(merge,merge_out,A+[INF]*7+B+[INF]*7)==X[4:14]
for t in range(20000):
    A=sorted(random.random() for _ in range(9)); B=sorted(random.random() for _ in range(9)); C=sorted(random.random() for _ in range(9))
    X=run(merge,merge_out,A+[INF]*7+B+[INF]*7)  # X_5..X_14 (1-based)
    # s14 = min(X_14, max(X_13,C_1), ..., max(X_5, C_9))
    s=X[9]
    for i in range(5,14):
        j=14-i; s=min(s,max(X[i-5],C[j-1]))
    assert s==sorted(A+B+C)[13]
def ncmp(ops): return sum((lo is not None)+(hi is not None) for lo,hi,a,b in ops)

def name(w, inmap):
    if w[0]=='in': return inmap(w[1])
    return 't%d'%w[1]
def emit(ops, inmap, indent='  '):
    lines=[]
    for lo,hi,a,b in ops:
        A=name(a,inmap); B=name(b,inmap)
        if lo: lines.append(f'{indent}const NB_K {name(lo,inmap)} = NB_LO({A}, {B});')
        if hi: lines.append(f'{indent}const NB_K {name(hi,inmap)} = NB_HI({A}, {B});')
    return lines
out=[]
out.append('/* Generated (Batcher odd-even merge sort of 16 inputs, padding pruned; checked with the')
out.append(' * 0-1 principle on every input): sorts v[0..8] ascending. */')
out.append('GPIX_FUNC void nb_sort9(NB_K* v) {')
out+=emit(sort9, lambda i: f'v[{i}]')
for k,w in enumerate(sort9_out):
    out.append(f'  const NB_K s{k} = {name(w, lambda i: f"v[{i}]")};')
for k in range(9): out.append(f'  v[{k}] = s{k};')
out.append('}')
out.append('')
out.append('/* Median of 27 values given as three sorted runs of 9, a, b, c. X = the merge of a and b')
out.append(' * (only its 5th..14th smallest are computed: a generated, pruned Batcher merge checked like')
out.append(' * nb_sort9); the 14th smallest of X and c is min over i + j = 14 of max(X_i, c_j). */')
out.append('GPIX_FUNC NB_K nb_median27(const NB_K* a, const NB_K* b, const NB_K* c) {')
out+=emit(merge, lambda i: f'a[{i}]' if i<16 else f'b[{i-16}]')
X=[name(w, lambda i: f'a[{i}]' if i<16 else f'b[{i-16}]') for w in merge_out]  # X_5..X_14
out.append(f'  NB_K m = {X[9]};')
for i in range(5,14):
    j=14-i
    out.append(f'  m = NB_LO(m, NB_HI({X[i-5]}, c[{j-1}]));')
out.append('  return m;')
out.append('}')
code='\n'.join(out)
if len(sys.argv) == 3 and sys.argv[1] == '--check':
    with open(sys.argv[2]) as f:
        if code not in f.read():
            sys.exit(f'{sys.argv[2]} does not hold the networks this script generates: run '
                     f'{sys.argv[0]} and paste its output over nb_sort9 and nb_median27')
    print(f'{sys.argv[2]}: nb_sort9 and nb_median27 match the generator')
else:
    print(code)
