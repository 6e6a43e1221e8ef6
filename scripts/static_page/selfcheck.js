/* The static page's self-check (scripts/static_page/selfcheck.py writes the data).
 * Every message shown here was written by the lesson's own checker at build time; this script only looks up
 * the learner's answer. It reads plain integers and choices; anything else gets "try another form / check in
 * JupyterLab", never a verdict. No eval, nothing fetched. */
(function () {
  "use strict";
  var LAB = "请在 JupyterLab 里打开课程笔记本作答。";
  var FORM = "请换个写法：";
  var data = JSON.parse(document.getElementById("lesson-questions").textContent);

  function readInteger(text) {
    var t = text.normalize("NFKC").trim();
    if (!/^-?(0|[1-9][0-9]{0,14})$/.test(t)) return null;
    return parseInt(t, 10);
  }

  function groupThousands(n) {
    var s = String(Math.abs(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return (n < 0 ? "-" : "") + s;
  }

  function answerForm(q, form) {
    var tokens = [], filled = [], others = [], unread = [];
    q.boxes.forEach(function (b, i) {
      var token = "";
      if (b.type === "choice") {
        var picked = form.querySelector('input[name="' + b.name + '"]:checked');
        token = picked ? picked.value : "";
      } else {
        var text = form.querySelector('input[name="' + b.name + '"]').value;
        if (text.trim() !== "") {
          var n = readInteger(text);
          if (n === null) {
            unread.push("「" + b.label + "」");
          } else {
            token = String(n);
            if (!((q.answers_tokens || tokenSet(q))[i][token])) {
              others.push([b.other[0], groupThousands(n)], [b.other[1], String(n)]);
              token = "*";
            }
          }
        }
      }
      tokens.push(token);
      filled.push(token === "" ? "" : "#");
    });
    if (unread.length) {
      return ["form", FORM + unread.join("、") + "里的写法这个静态页面读不了：这里只认整数（例如 40000）。" +
              "要用算式或单位作答，" + LAB];
    }
    if (filled.indexOf("") >= 0) return q.answers[filled.join("|")];
    var said = q.answers[tokens.join("|")];
    if (!said) return ["form", "这个答案静态页面没有现成的反馈。" + LAB];
    var message = said[1];
    others.forEach(function (pair) { message = message.split(pair[0]).join(pair[1]); });
    return [said[0], message];
  }

  function tokenSet(q) {  // the tokens each box has a stored answer for
    var sets = q.boxes.map(function () { return {}; });
    Object.keys(q.answers).forEach(function (key) {
      key.split("|").forEach(function (t, i) { if (t !== "*" && t !== "#" && t !== "") sets[i][t] = true; });
    });
    q.answers_tokens = sets;
    return sets;
  }

  function answerChoices(q, form) {
    var keys = Array.prototype.map.call(form.querySelectorAll('input[name="choice"]:checked'),
                                        function (el) { return el.value; }).sort();
    return q.answers[keys.join("")] || ["form", "这个选择静态页面没有现成的反馈。" + LAB];
  }

  Array.prototype.forEach.call(document.querySelectorAll("form.lesson-selfcheck[data-question]"), function (form) {
    var q = data[form.getAttribute("data-question")];
    var out = form.querySelector(".lesson-q-feedback");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var said = q.choices ? answerChoices(q, form) : answerForm(q, form);
      out.className = "lesson-q-feedback lesson-q-" + said[0];
      out.textContent = said[1];
    });
  });
})();
