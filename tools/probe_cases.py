"""The programs ``probe_record_torch.py`` runs under the recorder.

Each case is a small CPU program that runs many aten operators in the ways
that make a recorder's bindings hard to get right: views with offsets,
steps, zero and overlapping strides; every dtype's element size; in-place
and ``out=`` writes into views, and ``out=`` arguments resized; storages
reached another way (``set_``, ``UntypedStorage`` slices, DLPack) or moved
(``resize_``); random, sorting, indexing, linear-algebra, sparse, complex
and conjugate operators; autograd and the optimizers' foreach and fused
steps.  They were written against the recorder to find where its log
leaves out a byte an operator reads or writes, and each of them helped to
find one or to show that a fix held.

Deterministic: the probe seeds PyTorch's generator before each case and runs
it on one thread.  A case returns its locals, so that what it made lives
to its end as in a program (the order in which storages die is part of what
is probed: a freed storage's address comes back), and is seen to be used.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = []


def case(fn):
    """Adds ``fn`` to ``CASES`` under its name."""
    CASES.append((fn.__name__, fn))
    return fn


def R(*shape, dtype=torch.float32):
    """A tensor of ``shape`` with random values of ``dtype``."""
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(*shape, dtype=dtype)
    if dtype == torch.bool:
        return torch.rand(*shape) > 0.5
    return torch.randint(0 if dtype == torch.uint8 else -5, 6, shape, dtype=dtype)


@case
def elementwise_views():
    base = R(6, 8)
    v = base[1:5:2, 2:7:2]                  # offset, steps
    t = base.t()[2:6]                       # transposed
    e = R(1, 4).expand(3, 4)                # zero stride
    a = v + 1
    b = torch.mul(t, 2.0)
    c = e * 3
    d = torch.where(v > 0, v, -v)
    s = base.narrow(1, 3, 2).sin()
    g = base.diagonal(offset=1).exp()
    u = base.unfold(1, 3, 2).sum(-1)
    sel = base.select(0, 3).neg()
    o = torch.as_strided(base, (3, 3), (1, 1), 5)   # overlapping strides
    oo = o.abs()
    z = base[:, 7:7].clone()
    sc = torch.tensor(2.5) * base[2]
    return locals()


@case
def dtypes():
    for dt in (torch.float16, torch.bfloat16, torch.complex64, torch.int32, torch.int8, torch.bool, torch.float64, torch.uint8):
        x = R(5, 6, dtype=dt)
        v = x[1:4, ::2]
        if dt == torch.bool:
            r = v & x[0:3, 1::2]
            r2 = ~v
        else:
            r = v + x[0:3, 1::2]
            r2 = v * 2
        if dt.is_complex:
            re = torch.view_as_real(v).sum()
            cj = v.conj() * 2
            cj2 = v.conj().clone()
            ab = v.abs()
    return locals()


@case
def inplace_on_views():
    base = R(6, 8)
    base[1:4, 2:6].add_(1)
    base[:, 0].mul_(2)
    base[2].fill_(3.0)
    base[::2, 1::3].zero_()
    base[1:3].copy_(R(8))              # broadcasting copy
    base.t()[3:5].copy_(R(2, 1))
    base[:, 5].clamp_(-0.5, 0.5)
    base[4:].masked_fill_(base[4:] > 0, 7.0)
    idx = torch.tensor([0, 2, 2])
    base[:, 6].index_put_((idx,), torch.tensor([1.0, 2.0, 3.0]), accumulate=True)
    base[:, 6].index_put_((idx,), torch.tensor([1.0, 2.0, 3.0]))
    base[1:5].index_add_(0, torch.tensor([0, 3]), R(2, 8))
    base[:, 1:4].scatter_(1, torch.tensor([[0], [2], [1], [0], [1], [2]]), 9.0)
    base[:, 1:4].scatter_add_(0, torch.tensor([[0, 1, 2]]), R(1, 3))
    base.diagonal().sub_(1)
    base.unfold(1, 3, 3).mul_(0.5)
    x = R(10)
    x[2:8].uniform_()
    x[::3].normal_()
    x[1::2].bernoulli_(0.5)
    x[::2].random_(0, 5)
    return locals()


@case
def out_variants():
    a, b = R(4, 5), R(4, 5)
    o = torch.empty(4, 5)
    torch.add(a, b, out=o)
    o2 = torch.empty(0)
    torch.mul(a, b, out=o2)                # must resize
    o3 = torch.empty(2, 2)
    torch.sub(a, b, out=o3)                # resize (warns) bigger
    o4 = torch.empty(8, 10)
    torch.add(a, b, out=o4[::2, ::2])      # out with gaps
    o5 = torch.empty(30)
    torch.sin(a, out=o5[:20].view(4, 5))
    big = torch.zeros(100)
    torch.cos(a, out=big[10:15])           # resize a view? (warns)
    v, i = torch.empty(0), torch.empty(0, dtype=torch.long)
    torch.sort(a, dim=1, out=(v, i))
    torch.topk(a.flatten(), 3, out=(v, i))
    n = torch.empty(0, dtype=torch.long)
    torch.nonzero(a > 0, out=n)
    c = torch.empty(0)
    torch.cat([a, b], out=c)
    torch.cumsum(a, 1, out=torch.empty(4, 5))
    torch.matmul(a, b.t(), out=torch.empty(4, 4))
    return locals()


@case
def foreach_ops():
    xs = [R(3), R(2, 2)[:, 0], R(4)[::2]]
    ys = [R(3), R(2), R(2)]
    torch._foreach_add_(xs, ys)
    torch._foreach_mul_(xs, 2.0)
    zs = torch._foreach_add(xs, ys, alpha=0.5)
    torch._foreach_zero_(zs)
    torch._foreach_copy_(xs, ys)
    torch._foreach_addcmul_(xs, ys, ys, value=0.1)
    torch._foreach_lerp_(xs, ys, 0.3)
    n = torch._foreach_norm(xs)
    torch._foreach_add_(xs, torch.tensor(1.0))
    torch._foreach_div_(xs, [torch.tensor(2.0), torch.tensor(3.0), torch.tensor(4.0)])
    return locals()


@case
def gather_index():
    w = R(10, 4)
    idx = torch.tensor([1, 3, 3, 9])
    e = F.embedding(idx, w)
    e2 = F.embedding(idx.view(2, 2) % 6, w[2:8], padding_idx=1)
    g = torch.gather(w, 1, torch.tensor([[0], [1], [2], [3], [0], [1], [2], [3], [0], [1]]))
    s = torch.index_select(w[:, 1:3], 0, idx)
    m = w[torch.tensor([True, False] * 5)]
    ii = w[idx, 2]
    tk = torch.take(w, torch.tensor([0, 39]))
    msk = torch.masked_select(w, w > 0)
    ms = w.masked_scatter(w > 0, R(40))
    return locals()


@case
def linalg():
    a, b = R(4, 6), R(6, 3)
    c = a @ b
    c2 = torch.mm(a[:, ::2], b[::2])
    c3 = torch.bmm(R(2, 3, 4), R(2, 4, 5).transpose(1, 2).contiguous().transpose(1, 2))
    c4 = torch.addmm(R(3), a, b)
    c5 = torch.matmul(R(2, 4, 6), b)
    c6 = torch.mv(a, R(6))
    c7 = torch.einsum("ij,jk->ik", a, b)
    bb = R(5, 5)
    c8 = torch.addmm(bb[1:3, 2], a[:, :4], bb[:4, :4][:, 1:3])
    return locals()


@case
def conv_norm():
    x = R(2, 3, 8, 8)
    w = R(4, 3, 3, 3)
    y = F.conv2d(x, w, R(4), padding=1)
    y2 = F.conv2d(x[:, :, ::2, ::2], w[:, :, 1:, 1:])
    bn = nn.BatchNorm2d(4)
    bn.train()
    z = bn(y)
    bn.eval()
    z2 = bn(y)
    ln = F.layer_norm(y, (8, 8), R(8, 8), R(8, 8))
    gn = F.group_norm(y, 2)
    p = F.max_pool2d(y, 2)
    ap = F.adaptive_avg_pool2d(y, 1)
    d = F.dropout(y, 0.5, training=True)
    sm = F.softmax(y, dim=1)
    lsm = F.log_softmax(y[:, :, 0], dim=-1)
    ce = F.cross_entropy(R(4, 5), torch.tensor([0, 1, 4, 2]))
    it = F.interpolate(x, scale_factor=2, mode="bilinear")
    gl = F.gelu(y)
    return locals()


@case
def sort_scan():
    x = R(5, 7)
    v, i = torch.sort(x[:, 1:6], dim=1)
    tv, ti = torch.topk(x.t(), 2)
    cs = torch.cumsum(x[::2], 0)
    cp = torch.cumprod(x, 1)
    nz = torch.nonzero(x > 0)
    u = torch.unique(torch.tensor([3, 1, 2, 3, 1]), return_inverse=True, return_counts=True)
    uc = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3]))
    r = x[1:3].repeat(2, 3)
    fl = torch.flip(x[:, ::2], [0, 1])
    ro = torch.roll(x, 2, 1)
    am = x.argmax(1)
    mx = x.max(dim=0)
    med = x.median()
    ks = torch.kthvalue(x, 2, 1)
    st = torch.stack([x[0], x[1], x[2]])
    ct = torch.cat([x[:, :2], x[:, 5:]], 1)
    tr = torch.tril(x)
    srt = torch.searchsorted(torch.tensor([0.0, 1.0, 2.0]), x)
    hist = torch.histc(x, 5)
    bc = torch.bincount(torch.tensor([0, 1, 1, 3]))
    return locals()


@case
def scalars_empty():
    s = torch.tensor(3.0)
    t = s * 2
    s.add_(1)
    q = s.item()
    e = torch.empty(0, 4)
    e2 = e + 1
    e3 = torch.cat([e, R(2, 4)])
    b = bool(s > 0)
    z = torch.zeros(())
    z.copy_(s)
    eq = torch.equal(s, z)
    return locals()


@case
def set_resize():
    a = R(10)
    v = a[2:6]
    b = torch.empty(0)
    b.set_(a.untyped_storage(), 4, (3,), (2,))
    b.mul_(2)
    c = b + v[1:]
    x = R(4)
    y = x[1:3]
    x.resize_(20)                       # grows: storage moves
    x[10:].fill_(0)
    w = y * 1
    z = R(3)
    z.resize_as_(R(8))
    return locals()


@case
def resize_moves_storage_of_view():
    # a tensor resized: the storage (shared with a view) moves
    base = R(6)
    view = base[3:5]
    base.add_(1)                        # writes base (bytes 0..24)
    base.resize_(50)
    r = view * 2                        # reads view, data copied from old memory
    return locals()


@case
def storage_tricks():
    a = R(8)
    st = a.untyped_storage()
    b = torch.tensor([], dtype=torch.float32).set_(st)
    b[3:5].add_(1)
    i32 = a.view(torch.int32)
    i32[0:2].bitwise_xor_(1)
    c = a.view(2, 4)[:, 1:3].contiguous()
    st.fill_(0)
    st2 = torch.UntypedStorage(16)
    st2.copy_(a.untyped_storage()[0:16])
    return locals()


@case
def dlpack_alias():
    a = R(8)
    a.add_(1)
    b = torch.from_dlpack(a)            # a new StorageImpl over the same bytes
    c = b * 2
    a.mul_(3)
    d = b + 1
    return locals()


@case
def autograd_sgd():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=True)
    for _ in range(2):
        x = torch.randn(5, 6)
        loss = F.cross_entropy(m(x), torch.tensor([0, 1, 2, 0, 1]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
    return locals()


@case
def autograd_adam_variants():
    torch.manual_seed(0)
    for kw in (dict(foreach=False), dict(foreach=True), dict(fused=True), dict(foreach=True, amsgrad=True)):
        m = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(12, 2))
        opt = torch.optim.Adam(m.parameters(), lr=0.01, **kw)
        x = torch.randn(2, 2, 4, 4)
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return locals()


@case
def autograd_adamw_misc():
    torch.manual_seed(0)
    emb = nn.Embedding(10, 4)
    lin = nn.Linear(4, 4)
    ln = nn.LayerNorm(4)
    opt = torch.optim.AdamW(list(emb.parameters()) + list(lin.parameters()) + list(ln.parameters()), lr=0.01, foreach=True)
    idx = torch.tensor([[1, 2, 3], [4, 4, 9]])
    h = ln(lin(emb(idx)))
    h = F.dropout(h, 0.2)
    loss = (h.softmax(-1) * torch.arange(4.0)).sum()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(emb.parameters()) + list(lin.parameters()), 1.0)
    opt.step()
    return locals()


@case
def misc_functional():
    x = R(3, 4, 5)
    a = F.pad(x, (1, 2))
    b = F.pad(x, (1, 1, 1, 1), mode="reflect")
    c = F.normalize(x, dim=-1)
    d = F.one_hot(torch.tensor([0, 2, 1]), 4)
    e = F.silu(x[:, 1])
    f = torch.nn.functional.scaled_dot_product_attention(R(1, 2, 4, 8), R(1, 2, 4, 8), R(1, 2, 4, 8), is_causal=True)
    g = F.mse_loss(x, torch.zeros_like(x))
    h = F.nll_loss(F.log_softmax(R(3, 4), 1), torch.tensor([0, 3, 1]))
    i = x.clone(memory_format=torch.contiguous_format)
    j = x.permute(2, 0, 1).contiguous()
    k = x.transpose(0, 1).reshape(4, 15)
    l = torch.full_like(x, 2.0)
    m = x.new_zeros(3)
    n = torch.zeros_like(x[:, ::2])
    o = torch.rand_like(x)
    p = torch.linspace(0, 1, 5)
    q = torch.arange(10)[::3].clone()
    r = x.to(torch.float16)
    s = x[:, ::2].to(torch.float64)
    t = x.float().double()
    u = torch.clamp(x, min=R(5))
    v = torch.lerp(x, torch.zeros(5), 0.5)
    w = torch.addcdiv(x, x, x.abs() + 1)
    y = torch.logsumexp(x, -1)
    z = torch.var_mean(x, 1)
    aa = torch.chunk(x, 2)[1].clone()
    bb = torch.tensor_split(x, 3, dim=2)[2] * 1
    cc = torch.polar(x.abs(), x)
    dd = torch.diff(x, dim=1)
    return locals()


@case
def index_put_variants():
    x = torch.zeros(5, 6)
    x[torch.tensor([0, 2]), torch.tensor([1, 3])] = torch.tensor([1.0, 2.0])
    x[1:4][torch.tensor([True, False, True])] = 5.0
    x[:, ::2][torch.tensor([4])] = R(1, 3)
    x.index_fill_(1, torch.tensor([0, 5]), -1.0)
    x[:, 1:5].index_copy_(1, torch.tensor([0, 3]), R(5, 2))
    x.put_(torch.tensor([0, 29]), torch.tensor([7.0, 8.0]))
    x.t()[2:4].masked_scatter_(torch.ones(2, 5, dtype=torch.bool), R(10))
    y = x.index_put((torch.tensor([0]),), torch.tensor(1.0))
    x.scatter_reduce_(1, torch.tensor([[0, 1]] * 5), R(5, 2), "amax")
    return locals()


@case
def copy_variants():
    a = R(4, 6)
    b = torch.empty(6, 4).t()
    b.copy_(a)
    c = torch.empty(4, 6, dtype=torch.float64)
    c.copy_(a)
    d = torch.empty(4, 6, dtype=torch.complex64)[:, ::2]
    d.copy_(a[:, 1::2])
    e = torch.empty(3, 4, 6)
    e.copy_(a)                 # broadcast
    f = torch.empty(4, 6)
    f[1:3].copy_(a[0])         # broadcast into view
    g = a.clone()
    g[:, 1:].copy_(g[:, :-1].clone())
    h = torch.empty(2, 3, dtype=torch.bool)
    h.copy_(torch.tensor([1, 0, 2]))
    k = torch.empty(4, 6).to(memory_format=torch.contiguous_format)
    k.copy_(a.t().contiguous().t())
    return locals()


@case
def batchnorm_functional():
    x = R(4, 3, 5)
    rm, rv = torch.zeros(3), torch.ones(3)
    y = F.batch_norm(x, rm, rv, R(3), R(3), training=True, momentum=0.2)
    y2 = F.batch_norm(x, rm, rv, training=False)
    rms = torch.zeros(6)
    y3 = F.batch_norm(x, rms[::2], rms[1::2], training=True)
    y4 = F.instance_norm(x, torch.zeros(3), torch.ones(3), use_input_stats=True)
    return locals()


@case
def rrelu_and_noise():
    x = R(4, 5)
    y = F.rrelu(x, training=True)
    z = F.rrelu(x[:, ::2], training=True)
    x2 = x.clone()
    F.rrelu_(x2[1:3], training=True)
    a = F.alpha_dropout(x, 0.3, training=True)
    fd = F.feature_alpha_dropout(R(2, 3, 4), 0.3, training=True)
    return locals()


@case
def complex_and_conj_ops():
    z = R(4, 4, dtype=torch.complex64)
    zc = z.conj()
    a = zc @ z
    b = zc + 1
    c = torch.mm(zc[:, ::2].t().conj(), z[:, 1::2])
    zz = z.clone()
    zz.conj().add_(1)      # writes through a conj view
    neg = torch.ops.aten._neg_view(z)
    d = neg * 2
    r = torch.view_as_real(z)[:, :, 0].clone()
    fft = torch.fft.fft(z[:, 0])
    rf = torch.fft.rfft(R(8))
    return locals()


@case
def linalg_lapack():
    a = R(4, 4) + 4 * torch.eye(4)
    b = R(4, 2)
    x = torch.linalg.solve(a, b)
    lu, piv = torch.linalg.lu_factor(a[:, :])
    inv = torch.linalg.inv(a.t())
    q, r = torch.linalg.qr(R(5, 3))
    spd = a @ a.t()
    ch = torch.linalg.cholesky(spd)
    ev = torch.linalg.eigh(spd)
    sv = torch.linalg.svdvals(R(4, 3))
    det = torch.linalg.det(a)
    n = torch.linalg.norm(a, ord=2)
    ls = torch.linalg.lstsq(R(5, 3), R(5, 2))
    tri = torch.linalg.solve_triangular(torch.triu(a), b, upper=True)
    pinv = torch.linalg.pinv(R(3, 4))
    cd = torch.cdist(R(3, 4), R(5, 4))
    return locals()


@case
def autograd_ops():
    torch.manual_seed(0)
    x = torch.randn(3, 6, requires_grad=True)
    w = torch.randn(6, 6, requires_grad=True)
    y = (x @ w)[:, ::2]
    y = y.gather(1, torch.tensor([[0, 2], [1, 1], [2, 0]]))
    z = torch.cumsum(x, 1).flip(0)[:, 1:4]
    s, _ = torch.sort(x, 1)
    o = torch.as_strided(x, (3, 3), (1, 1), 2)   # overlapping view
    e = x[0].expand(4, 6)
    loss = y.sum() + z.pow(2).sum() + s[:, 0].sum() + o.sin().sum() + e.mean()
    loss = loss + torch.index_select(x, 1, torch.tensor([0, 0, 5])).sum()
    loss = loss + x.unfold(1, 2, 2).prod(-1).sum() + x.diagonal().sum()
    loss = loss + F.max_pool1d(x.unsqueeze(0), 2).sum() + torch.topk(x, 2)[0].sum()
    loss.backward()
    _ = x.grad.sum().item()
    return locals()


@case
def autograd_conv_pool_attn():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 7, requires_grad=True)
    conv = nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=1, groups=1)
    dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)
    ct = nn.ConvTranspose2d(4, 2, 2, stride=2)
    y = ct(F.relu(dw(conv(x))))
    y = F.avg_pool2d(y, 2) + F.max_pool2d(y, 2)
    q = torch.randn(1, 2, 5, 8, requires_grad=True)
    att = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    loss = y.square().mean() + att.sum()
    loss.backward()
    return locals()


@case
def lstm_gru():
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 5, num_layers=1, batch_first=True)
    gru = nn.GRU(5, 3)
    x = torch.randn(2, 3, 4)
    o, (h, c) = lstm(x)
    o2, h2 = gru(o.transpose(0, 1))
    o2.sum().backward()
    return locals()


@case
def grad_scaler_fused():
    torch.manual_seed(0)
    m = nn.Linear(4, 3)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, fused=True)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    for _ in range(2):
        loss = m(torch.randn(5, 4)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    opt2 = torch.optim.Adagrad(m.parameters(), lr=0.1, foreach=True)
    m(torch.randn(2, 4)).sum().backward()
    opt2.step()
    opt3 = torch.optim.RMSprop(m.parameters(), lr=0.1, foreach=False, momentum=0.5)
    opt3.step()
    opt4 = torch.optim.AdamW(m.parameters(), lr=0.1, fused=True, amsgrad=True)
    opt4.step()
    return locals()


@case
def embedding_variants():
    torch.manual_seed(0)
    w = torch.randn(10, 4)
    idx = torch.tensor([1, 2, 2, 7])
    e = F.embedding(idx, w, max_norm=1.0)            # renorms w in place
    eb = F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3]), w, torch.tensor([0, 3]), mode="mean")
    eb2 = F.embedding_bag(torch.tensor([[1, 2], [3, 4]]), w, mode="max")
    emb = nn.Embedding(10, 4)
    emb(idx).sum().backward()
    return locals()


@case
def out_views_resize():
    a = R(3, 4)
    big = torch.zeros(40)
    v = big[5:17].view(3, 4)
    torch.exp(a, out=v)
    w = big[20:22]
    torch.neg(a, out=w)            # wrong size: resize_ of a view inside a larger storage
    t = torch.zeros(4, 3).t()
    torch.abs(a, out=t)            # transposed out
    s = torch.zeros(2, 4)
    torch.sum(a, 0, keepdim=True, out=s[1:])
    m, i = torch.zeros(3), torch.zeros(3, dtype=torch.long)
    torch.max(a, 1, out=(m, i))
    q = torch.zeros(10)[::2]
    torch.add(a[0, :2], 1, out=q)   # out with gaps, wrong size -> resize
    return locals()


@case
def misc_ops2():
    x = R(4, 5)
    a = torch.bucketize(x, torch.tensor([-1.0, 0.0, 1.0]))
    b = torch.histogram(x.cpu(), 4)  # on the CPU only (none on CUDA)
    c = torch.unique(x.round(), dim=0)
    d = torch.nn.functional.unfold(R(1, 2, 4, 4), 2)
    e = torch.nn.functional.fold(d, (4, 4), 2)
    f = torch.nn.functional.grid_sample(R(1, 1, 4, 4), R(1, 3, 3, 2).tanh(), align_corners=False)
    g = torch.tril_indices(4, 4)
    h = torch.block_diag(R(2, 2), R(1, 3))
    i = torch.kron(R(2, 2), R(2, 2))
    j = torch.trapezoid(x)
    k = torch.logcumsumexp(x, 0)
    l = torch.renorm(x, 2, 0, 1.0)
    m = torch.cross(R(3, 3), R(3, 3), dim=1)
    n = torch.atan2(x, x.t().contiguous().t())
    o = torch.nan_to_num(x / 0)
    p = torch.multinomial(x.abs() + 0.1, 2)
    q = torch.randperm(6)
    r = torch.index_reduce(x, 0, torch.tensor([0, 0, 1, 3]), R(4, 5), "prod")
    s = torch.segment_reduce(R(6), "sum", lengths=torch.tensor([2, 4]))
    t = torch.count_nonzero(x > 0, 1)
    u = torch.any(x > 3)
    v = torch.isin(torch.tensor([1, 2, 3]), torch.tensor([2, 5]))
    w = x.T.clone().masked_fill(torch.tensor([True, False, True, False]), 0.0)
    y = torch.clamp_(x[:, 1:3], max=torch.zeros(2))
    torch._assert_async(torch.tensor(True))
    z = torch.stft(R(64), 16, return_complex=True, window=torch.hann_window(16))
    return locals()


@case
def inplace_with_tensor_scalars():
    x = R(4, 4)
    s = torch.tensor(0.5)
    x[1:3].add_(s)
    x[:, 0].masked_fill_(x[:, 0] > 0, s)
    x.clamp_(min=torch.tensor(-0.5), max=s)
    x[::2].lerp_(torch.zeros(4), s)
    x.addcmul_(x, x, value=0.1)
    x[0].copy_(s)
    torch.where(x > 0, x, s)
    x.index_fill_(0, torch.tensor([3]), s)
    return locals()


@case
def sparse_ops():
    torch.manual_seed(0)
    d = R(4, 5)
    d.add_(1)
    s = d.relu().to_sparse()
    y = torch.sparse.mm(s, R(5, 3))
    z = s.to_dense()
    emb = nn.Embedding(6, 3, sparse=True)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    emb(torch.tensor([1, 4])).sum().backward()
    opt.step()
    return locals()


@case
def edge_writes():
    z = torch.zeros(1)
    try:
        z.expand(3).fill_(1.0)            # write through a zero-stride view
    except RuntimeError:
        pass
    o = torch.zeros(6)
    ov = torch.as_strided(o, (3, 2), (1, 1))   # overlapping view
    try:
        ov.zero_()
    except RuntimeError:
        pass
    try:
        ov.copy_(torch.ones(3, 2))
    except RuntimeError:
        pass
    x = torch.arange(12.0)
    x.view(3, 4)[:, 1].copy_(x.view(3, 4)[:, 2])
    y = x.view(3, 4).t()
    y[1:3].copy_(y[0])
    q = torch.zeros(3, 4)
    q.copy_(q)                           # self copy
    e = torch.empty(0)
    e.copy_(torch.empty(0))
    s = torch.zeros(())
    s.fill_(torch.tensor(3.0))
    b = torch.zeros(4, dtype=torch.bool)
    b[1:3] = True
    c = torch.zeros(4, dtype=torch.complex64)
    c.real.add_(1)                       # real view of complex
    c.imag[1:].fill_(2)
    h = torch.zeros(8, dtype=torch.float16)
    h.view(torch.int16)[::2].fill_(15360)
    i8 = torch.zeros(8, dtype=torch.uint8)
    i8.view(torch.float32).add_(1)
    v = torch.zeros(10)
    v.unfold(0, 3, 3).add_(1)
    w = torch.zeros(3, 3)
    w.diagonal().copy_(torch.tensor([1.0, 2.0, 3.0]))
    w.t().triu_()
    w[:, 1:].tril_()
    return locals()


@case
def small_transformer_step():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
    head = nn.Linear(8, 5)
    opt = torch.optim.AdamW(list(layer.parameters()) + list(head.parameters()), lr=1e-3, foreach=True)
    x = torch.randn(2, 4, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    out = head(layer(x, src_mask=mask, is_causal=True))
    loss = F.cross_entropy(out.reshape(-1, 5), torch.tensor([0, 1, 2, 3, 4, 0, 1, 2]))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(layer.parameters(), 0.5)
    opt.step()
    opt.zero_grad(set_to_none=False)
    loss.item()
    return locals()


@case
def grad_accumulate_retain():
    torch.manual_seed(0)
    lin = nn.Linear(3, 3)
    x = torch.randn(4, 3)
    for _ in range(2):
        y = lin(x).tanh().sum()
        y.backward(retain_graph=True)
        y.backward()
    g = lin.weight.grad[:, 1].clone()
    lin.weight.grad.zero_()
    with torch.no_grad():
        lin.weight.mul_(0.5)
        lin.weight[0].copy_(lin.bias)
    return locals()
