"""Chinese for the leniency and diagnosis audit (issue 14): dtype, inputs changed in place, the
underflowing softmax, per-library hints, float32 inside float64, errors in leftover cells (see zh.py).

Conventions as in zh_core.py: code stays code, Chinese punctuation around Chinese text.
"""
MESSAGES = {
    # ------------------------------------------------------------ dtype
    "{what}: float32 input gave a float64 result, computed in float64. Accepted in this step: dividing (or "
    "multiplying) by a NumPy float64 scalar such as np.sqrt(d_k) makes NumPy 2 promote the float32 array to "
    "float64 (so does converting the scores before the division). `scores / math.sqrt(d_k)` keeps float32.":
        "{what}：float32 输入得到了在 float64 中计算的 float64 结果。本步接受：除以（或乘以）一个 NumPy float64 "
        "标量，例如 np.sqrt(d_k)，会使 NumPy 2 把 float32 数组提升为 float64（在除法之前先转换分数也是如此）。"
        "`scores / math.sqrt(d_k)` 能保持 float32。",
    "{what} has dtype float64, but every value is a float32 number: the arithmetic was done in float32 and the "
    "result converted to float64 afterwards (an .astype(float), np.float64(...) or np.asarray(..., dtype=float) "
    "at the end). Return the float32 result as it is.":
        "{what} 的 dtype 是 float64，但每个值都是 float32 数：运算是在 float32 中完成的，结果事后才转换成 float64"
        "（末尾的 .astype(float)、np.float64(...) 或 np.asarray(..., dtype=float)）。请直接返回 float32 结果。",
    "{what} has dtype float64; expected float32, the dtype of the input: the dtype was not kept. float32 is "
    "chosen to halve the memory and speed up the arithmetic (and GPUs are fastest in it); code that widens it to "
    "float64 silently doubles both, and the rest of a float32 model would then have to convert back. "
    "Look for {cause}.":
        "{what} 的 dtype 是 float64；应为 float32，即输入的 dtype：dtype 没有保持。选用 float32 是为了让内存减半、"
        "运算更快（GPU 在 float32 下最快）；把它悄悄扩成 float64 的代码会让两者都翻倍，"
        "float32 模型的其余部分还得再转换回来。请检查 {cause}。",
    "a .double(), dtype=torch.float64, or a float64 tensor created without dtype=x.dtype":
        ".double()、dtype=torch.float64，或没有指定 dtype=x.dtype 而新建的 float64 张量",
    "an .astype(float) or np.float64(...), dtype=float in a new array, or a NumPy float64 scalar such as "
    "np.sqrt(d) in the arithmetic (NumPy 2 promotes float32 with it; math.sqrt keeps float32)":
        ".astype(float) 或 np.float64(...)、新数组中的 dtype=float，或运算中的 NumPy float64 标量，"
        "例如 np.sqrt(d)（NumPy 2 会因它提升 float32；math.sqrt 则保持 float32）",
    # ------------------------------------------------------------ inputs changed in place
    "argument {n}":
        "第 {n} 个参数",
    "{what}: your code changed {names} in place (an in-place operation such as `x /= ...`, `x -= ...`, "
    "`x[...] = ...` or `out=x`). The caller may still need the original values: compute a new array instead "
    "(x = x - ..., not x -= ...).":
        "{what}：你的代码原地修改了 {names}（原地操作，例如 `x /= ...`、`x -= ...`、`x[...] = ...` 或 `out=x`）。"
        "调用者可能还需要原来的值：请计算一个新数组（写 x = x - ...，而不是 x -= ...）。",
    "{what}: your code changed {names} in place (an in-place operation such as `x /= ...`, `x.sub_(...)`, "
    "`x[...] = ...` or a write through .data). The caller, and autograd, may still need the original values: "
    "compute new tensors instead (x = x / ..., not x /= ...).":
        "{what}：你的代码原地修改了 {names}（原地操作，例如 `x /= ...`、`x.sub_(...)`、`x[...] = ...`，"
        "或通过 .data 写入）。调用者和 autograd 可能还需要原来的值：请计算新的张量（写 x = x / ...，而不是 x /= ...）。",
    # ------------------------------------------------------------ softmax: overflow and underflow
    "you subtracted the maximum of the whole array instead of each row's own: on rows far below that maximum "
    "every exp() underflows to 0, and 0 / 0 is nan.":
        "你减去的是整个数组的最大值，而不是每一行自己的最大值：在远低于该最大值的行上，每个 exp() 都下溢为 0，"
        "而 0 / 0 是 nan。",
    "Subtracting a row's own maximum keeps its largest exponent at exactly 0, so the row's sum is at least 1; "
    "one maximum for the whole array leaves rows whose exponents are all far below 0.":
        "减去一行自己的最大值，能让该行最大的指数恰好为 0，于是该行的和至少为 1；"
        "整个数组只用一个最大值，则会留下所有指数都远小于 0 的行。",
    "take the maximum along the axis you normalise: x.max(axis=axis, keepdims=True).":
        "沿你归一化的那个轴取最大值：x.max(axis=axis, keepdims=True)。",
    "take the maximum along the softmax's dimension: scores.amax(dim=-1, keepdim=True), or use "
    "torch.softmax(scores, dim=-1).":
        "沿 softmax 的维度取最大值：scores.amax(dim=-1, keepdim=True)，或者使用 torch.softmax(scores, dim=-1)。",
    "The scores here reach about {largest}; rows whose scores all lie far below the largest one get exp() = 0 "
    "everywhere once that one maximum is subtracted, and 0 / 0 is nan. torch.softmax, or subtracting each row's "
    "own maximum (amax(dim=-1, keepdim=True)), avoids that.":
        "这里的分数达到约 {largest}；减去这一个最大值后，分数都远低于它的那些行处处 exp() = 0，而 0 / 0 是 nan。"
        "使用 torch.softmax，或减去每一行自己的最大值（amax(dim=-1, keepdim=True)），就能避免。",
    # ------------------------------------------------------------ hints in torch's names
    "normalise over the last dimension: torch.softmax(scores, dim=-1), or dim=-1 with keepdim=True in both the "
    "max and the sum.":
        "在最后一个维度上归一化：torch.softmax(scores, dim=-1)，或在求最大值和求和时都用 dim=-1 和 keepdim=True。",
    "use torch.softmax(scores, dim=-1), or subtract scores.amax(dim=-1, keepdim=True) before exp().":
        "使用 torch.softmax(scores, dim=-1)，或在 exp() 之前减去 scores.amax(dim=-1, keepdim=True)。",
    "use Q @ K^T (swap the last two axes of K: np.swapaxes(K, -1, -2)).":
        "使用 Q @ K^T（交换 K 的最后两个轴：np.swapaxes(K, -1, -2)）。",
    "use Q @ K^T (swap the last two dimensions of K: K.transpose(-2, -1)).":
        "使用 Q @ K^T（交换 K 的最后两个维度：K.transpose(-2, -1)）。",
    "replace the loop by operations on whole tensors: @ (matmul) and broadcasting over the leading dimensions, "
    "reductions with dim=... and keepdim=True, view/transpose for the heads.":
        "用整张量运算代替循环：@（matmul）和在前导维度上的广播，带 dim=... 和 keepdim=True 的归约，"
        "以及处理注意力头的 view/transpose。",
    # ------------------------------------------------------------ float32 inside float64
    "{what}: part of the computation runs in {lower} although everything came in as float64 ({ops}). "
    "Precision is lost to {lower} inside the computation: the results carry only {lower}'s digits (about 7 for "
    "float32), where the float64 checks compare at about 15, and finite differences (the gradient check) need "
    "them. Keep every tensor in the input's dtype: no .float(), .to(torch.float32) or dtype=torch.float32 (in "
    "torch.softmax too); use x.dtype.":
        "{what}：虽然所有输入都是 float64，但部分计算在 {lower} 中进行（{ops}）。精度在计算内部损失给了 {lower}："
        "结果只保留 {lower} 的有效数字（float32 约 7 位），而 float64 检查按约 15 位比较，"
        "有限差分（梯度检查）也需要这些位数。请让每个张量保持输入的 dtype：不要用 .float()、.to(torch.float32) "
        "或 dtype=torch.float32（torch.softmax 中也不要）；使用 x.dtype。",
    "{what}: part of the computation holds {lower} arrays although everything came in as float64 ({ops}). "
    "Precision is lost to {lower} inside the computation: the results carry only {lower}'s digits (about 7 for "
    "float32), where the float64 checks compare at about 15. Keep every array in the input's dtype: no "
    ".astype(np.float32) or dtype=np.float32; use x.dtype.":
        "{what}：虽然所有输入都是 float64，但部分计算持有 {lower} 数组（{ops}）。精度在计算内部损失给了 {lower}："
        "结果只保留 {lower} 的有效数字（float32 约 7 位），而 float64 检查按约 15 位比较。"
        "请让每个数组保持输入的 dtype：不要用 .astype(np.float32) 或 dtype=np.float32；使用 x.dtype。",
    # ------------------------------------------------------------ errors in leftover cells
    "Note: running your file raised {n} error(s), ignored because everything this step needs was defined. "
    "The first: {error}: {message}{where}. Remove or fix leftover cells: the notebook's own tests would stop "
    "there.":
        "注意：运行你的文件时出现了 {n} 个错误；因为本步需要的内容都已定义，这些错误被忽略。"
        "第一个：{error}: {message}{where}。请删除或修正残留的单元格：notebook 自带的测试会在那里停下。",
    " (at {place})":
        "（位于 {place}）",
}
