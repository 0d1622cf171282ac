"""Chinese for the class view (class_report.py): the instructor's page of the whole class."""

MESSAGES = {
    "attention-kit: the class": "attention-kit：全班概览",
    "Totals": "总分",
    "Steps": "各步骤",
    "Common mistakes": "常见错误",
    "Most-failed checks": "失败最多的检查项",
    "Code that looks alike": "相似的代码",
    "Students": "学生",
    "Not graded": "未评分",
    "{n} submissions graded, {m} could not be graded.": "已评分 {n} 份提交，{m} 份无法评分。",
    "Total: mean {mean}, median {median}, from {low} to {high} of {top}; {full} at full marks.":
        "总分：平均 {mean}，中位数 {median}，范围 {low} 至 {high}（满分 {top}）；{full} 人满分。",
    "total points": "总分",
    "students": "学生人数",
    "points at the step": "该步骤得分",
    "step {number}": "第 {number} 步",
    "mean": "平均分",
    "at full marks": "满分人数",
    "correct but slow": "正确但慢",
    "forbidden API": "禁用的 API",
    "still a stub": "仍是桩代码",
    "no file": "缺少文件",
    "Correct but slow: every check passed but the complexity one. Forbidden API: the step's code called a library "
    "function the step asks students to write.":
        "正确但慢：除复杂度检查外其余检查全部通过。禁用的 API：该步骤的代码调用了本步骤要求学生自己实现的库函数。",
    "mistake": "错误",
    "diagnosis and hint": "诊断与提示",
    "{count} of {n} students": "{n} 名学生中的 {count} 名",
    "No mistake from the catalogue was named in this class.": "本班没有出现错误目录中的任何错误。",
    "Each cell: the share of the graded students told this mistake at this step; a dot: the mistake cannot occur "
    "at that step. Sorted by how many students were told it.":
        "每个格子：在该步骤被指出此错误的已评分学生所占比例；圆点：此错误不可能出现在该步骤。"
        "按被指出的学生人数排序。",
    "No check failed for a student who handed in code for its step.": "提交了相应步骤代码的学生没有任何检查项失败。",
    "a typical message": "典型消息",
    "Counted among the students who handed in code for the check's step (not a stub, not missing); the message is "
    "the one most of them got.":
        "只统计提交了该检查项所在步骤代码的学生（不含桩代码和缺失的文件）；消息是其中大多数人收到的那一条。",
    "student": "学生",
    "error": "错误",
    "Click a column to sort by it; each name opens that student's feedback page.":
        "点击列标题即可按该列排序；点击姓名可打开该学生的反馈页面。",
    "Every submission was graded.": "所有提交都已评分。",
    "submission": "提交",
    "reason": "原因",
    "too few to compare": "人数太少，无法比较",
    "none: most of the class writes alike here": "无：本班大多数人在这里写法相同",
    "Similarity was not computed (--no-similarity).": "未计算相似度（--no-similarity）。",
    "Similarity is a reason to look, never a verdict: short or forced code, a shared tutorial or working together "
    "as allowed make code alike. Read the code side by side before concluding anything.":
        "相似度只是值得查看的理由，绝不是结论：简短或写法固定的代码、共同的教程、或按规定允许的合作，"
        "都会让代码相似。在下任何结论之前，请先并排阅读代码。",
    "Compared: each student's own code (the step files; in notebooks only the cells students write), with "
    "variable and function names, comments and strings ignored, without the stub's code and without the code more "
    "than {cap} students share at a step (the class's common code). A pair is listed when, at a step or overall, "
    "the share of its distinctive code that the other also has is far above the class's usual (the step's "
    "threshold below).":
        "比较的是每名学生自己的代码（各步骤文件；笔记本中只包括学生编写的单元格），忽略变量名、函数名、注释和字符串，"
        "去掉桩代码，也去掉在某一步骤中超过 {cap} 名学生共有的代码（全班的共同代码）。当某一对提交在某一步骤或整体上，"
        "其独特代码中被对方同样拥有的比例远高于全班通常水平（即下表中该步骤的阈值）时，就会被列出。",
    "students compared": "参与比较的学生",
    "threshold": "阈值",
    "pairs": "对数",
    "overall": "整体",
    "No pair of submissions stands out.": "没有哪一对提交显得突出。",
    "Highlighted: the lines of distinctive code found in both.": "高亮：两份代码中都出现的独特代码行。",
    "{a} and {b}: {overall} alike overall; steps {steps}": "{a} 与 {b}：整体相似度 {overall}；步骤 {steps}",
    "Step {number}: {share} alike": "第 {number} 步：相似度 {share}",
}
