// The approval page's script. It loads the holds from the API with the token from the address's
// fragment, and writes every string it gets as text (textContent), never as HTML: agent-written
// text is data. The server already escaped control and direction characters in `display`.
"use strict";

(() => {
  const POLL_MS = 1000;
  const TOKEN_KEY = "sc-approve-token";

  const pendingBox = document.getElementById("pending");
  const endedBox = document.getElementById("ended");
  const nonePending = document.getElementById("none-pending");
  const status = document.getElementById("status");

  // Pending cards on the page, by hold number: {card, deadline, timeLeft, outcome, buttons}.
  const cards = new Map();
  let endedShown = "";

  const token = takeToken();

  // The token travels in the fragment, which the browser never sends. It is kept for this tab
  // and taken out of the address bar.
  function takeToken() {
    const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
    if (match) {
      window.sessionStorage.setItem(TOKEN_KEY, match[1]);
      window.history.replaceState(null, "", window.location.pathname);
    }
    return window.sessionStorage.getItem(TOKEN_KEY);
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined && text !== null) {
      node.textContent = String(text);
    }
    return node;
  }

  // Text shown whole, never cut: it wraps at its spaces, and a run of other characters too long
  // for the line breaks after a `.`, `/`, `@`, `?`, `&` or `=` (a <wbr> there: an address, a
  // path, a URL), and only as a last resort anywhere (CSS overflow-wrap), so that the domain of
  // a recipient and the extension of a file are on the screen. Each run is a .word span, each
  // piece between break points a text node of its own. Very long text stays one text node.
  const WORDS_UP_TO = 20000;
  const BREAK_AFTER = /([./@?&=])/;

  function wordInto(span, word) {
    let piece = "";
    for (const part of word.split(BREAK_AFTER)) {
      piece += part;
      if (BREAK_AFTER.test(part) && part.length === 1) {
        span.append(document.createTextNode(piece), document.createElement("wbr"));
        piece = "";
      }
    }
    if (piece !== "") {
      span.append(document.createTextNode(piece));
    }
    return span;
  }

  function wordsInto(node, text) {
    text = String(text);
    if (text.length > WORDS_UP_TO) {
      node.classList.add("long");
      node.textContent = text;
      return node;
    }
    for (const part of text.split(/(\s+)/)) {
      if (part === "") {
        continue;
      }
      if (/^\s+$/.test(part)) {
        node.append(document.createTextNode(part));
      } else {
        node.append(wordInto(element("span", "word"), part));
      }
    }
    return node;
  }

  function field(list, key, label, value) {
    if (value === undefined || value === null) {
      return;
    }
    list.append(element("dt", null, label));
    const dd = element("dd", "field-" + key);
    if (key === "args") {
      dd.append(wordsInto(element("pre"), value));
    } else {
      wordsInto(dd, value);
    }
    list.append(dd);
  }

  // The card: the call in plain words, why it is held, the call's fields, and its ids and
  // digest behind a "details" disclosure, closed until opened.
  function cardFor(item, state) {
    const shown = item.display || {};
    const card = element("article", "card");
    card.dataset.hold = String(Number(item.hold));
    card.dataset.state = state;
    card.append(
      wordsInto(element("h3", "summary"), shown.summary || shown.agent + " wants to run " + shown.tool),
    );
    const reasons = element("ul", "reasons field-reasons");
    for (const reason of shown.reasons || []) {
      reasons.append(wordsInto(element("li"), reason));
    }
    card.append(reasons);
    const list = element("dl");
    field(list, "agent", "agent", shown.agent);
    field(list, "tool", "tool", shown.tool);
    field(list, "args", "arguments", shown.args);
    field(list, "source", "source", shown.source);
    field(list, "instruction", "instruction", shown.instruction === null ? "(none)" : shown.instruction);
    field(list, "tainted-by", "tainted", shown.taintedBy);
    field(list, "spent", "spent so far", shown.spent);
    card.append(list);
    const details = element("details", "ids");
    details.append(element("summary", null, "details"));
    const ids = element("dl");
    field(ids, "id", "record id", shown.id);
    field(ids, "digest", "record SHA-256", item.digest);
    field(ids, "hold", "hold", String(Number(item.hold)));
    field(ids, "expires-at", "declines at", item.expiresAt);
    details.append(ids);
    card.append(details);
    return card;
  }

  async function api(path, options) {
    const init = Object.assign(
      {
        cache: "no-store",
        credentials: "omit",
        headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
      },
      options || {},
    );
    return window.fetch(path, init);
  }

  // What a yes may be remembered for, beyond this call: the button's words, and what the
  // confirmation says will be remembered. The gate decides how long (a grant's lifetime).
  const WIDER = {
    call: {
      button: "Approve and remember this call",
      className: "approve-call",
      remembered: (shown) =>
        "Remember this call? Later calls by " + String(shown.agent) + " of " + String(shown.tool) +
        " with exactly these arguments will run without asking you again.",
    },
    value: {
      button: "Approve and trust these values",
      className: "approve-value",
      remembered: (shown) =>
        "Trust these values? The untrusted values this call was held for become trusted for " +
        String(shown.agent) + ": its later calls are not held again because of them.",
    },
  };
  const HOW_LONG = "For this agent, until it expires or is revoked with sc-state revoke.";

  // The scopes a yes may take, as the API lists them; `once` always, whatever else it says.
  function scopesOf(item) {
    const listed = Array.isArray(item.scopes) ? item.scopes : [];
    return ["once"].concat(Object.keys(WIDER).filter((scope) => listed.includes(scope)));
  }

  function pendingCard(item) {
    const card = cardFor(item, "pending");
    const shown = item.display || {};
    const footer = element("footer");
    const timeLeft = element("span", "time-left");
    const outcome = element("span", "outcome");
    footer.append(timeLeft, outcome);
    const entry = {
      card: card,
      deadline: item.secondsLeft === null ? null : performance.now() + item.secondsLeft * 1000,
      timeLeft: timeLeft,
      outcome: outcome,
      buttons: [],
      confirm: null,
    };
    for (const scope of scopesOf(item)) {
      const wider = WIDER[scope];
      const button = element(
        "button",
        wider ? "approve-wide " + wider.className : "approve",
        wider ? wider.button : "Approve once",
      );
      button.type = "button";
      button.dataset.scope = scope;
      button.addEventListener("click", () =>
        wider ? askToConfirm(entry, item, scope) : answer(entry, item, true, scope),
      );
      entry.buttons.push(button);
    }
    const decline = element("button", "decline", "Decline");
    decline.type = "button";
    decline.addEventListener("click", () => answer(entry, item, false, "once"));
    entry.buttons.push(decline);
    footer.append(...entry.buttons);
    card.append(footer);
    return entry;
  }

  // A yes that reaches further than this call is confirmed on the card first: what will be
  // remembered, and for how long.
  function askToConfirm(entry, item, scope) {
    if (entry.confirm) {
      entry.confirm.remove();
    }
    const shown = item.display || {};
    const box = element("div", "confirm");
    box.dataset.scope = scope;
    box.setAttribute("role", "alertdialog");
    box.append(wordsInto(element("p", "remembered"), WIDER[scope].remembered(shown)));
    // As the card shows every other piece of agent-written text: escaped (a value of bidi
    // controls must not read as another word here).
    const values = shown.values || [];
    if (scope === "value" && Array.isArray(values) && values.length > 0) {
      const list = element("ul", "values");
      for (const value of values) {
        list.append(wordsInto(element("li"), value));
      }
      box.append(list);
    }
    box.append(wordsInto(element("p", "how-long"), HOW_LONG));
    const yes = element("button", "confirm-yes", WIDER[scope].button);
    const no = element("button", "confirm-no", "Cancel");
    yes.type = "button";
    no.type = "button";
    yes.addEventListener("click", () => {
      box.remove();
      entry.confirm = null;
      answer(entry, item, true, scope);
    });
    no.addEventListener("click", () => {
      box.remove();
      entry.confirm = null;
    });
    const choices = element("div", "confirm-choices");
    choices.append(yes, no);
    box.append(choices);
    entry.confirm = box;
    entry.card.append(box);
    yes.focus();
  }

  async function answer(entry, item, approve, scope) {
    if (entry.confirm) {
      entry.confirm.remove();
      entry.confirm = null;
    }
    for (const button of entry.buttons) {
      button.disabled = true;
    }
    entry.outcome.textContent = approve ? "Approving\u2026" : "Declining\u2026";
    try {
      const response = await api("/api/holds/" + String(Number(item.hold)), {
        method: "POST",
        body: JSON.stringify({ approve: approve, digest: item.digest, scope: scope }),
      });
      const body = await response.json().catch(() => ({}));
      if (response.ok) {
        entry.card.dataset.state = body.approved ? "approved" : "declined";
        entry.outcome.textContent = body.approved ? approvedWords(body, scope) : "Declined";
      } else {
        entry.outcome.textContent = "Not taken: " + String(body.error || response.status);
      }
    } catch (error) {
      entry.outcome.textContent = "Not sent: the approver cannot be reached";
      for (const button of entry.buttons) {
        button.disabled = false;
      }
    }
    refresh();
  }

  // What the approver kept of a yes, as its reply says: the scope and the grant's id; a wider
  // scope it could not keep is said so, never shown as remembered.
  function approvedWords(body, asked) {
    if (body.notRun) {
      return "Approved, but not run: " + String(body.notRun);
    }
    if (body.grant) {
      return "Approved and remembered (scope " + String(body.scope) + ", grant " + String(body.grant) + ")";
    }
    if (body.scope === "once") {
      return asked === "once" ? "Approved once" : "Approved once: it could not be remembered";
    }
    return "Approved (" + String(body.kept || "what was remembered is not known") + ")";
  }

  function endedCard(item) {
    const card = cardFor(item, item.state);
    const footer = element("footer");
    const kept = item.kept || null;
    const words = {
      approved: item.reports === false
        ? "Approved: the program that holds the call decides it again as it runs it; its audit log says what it did"
        : kept && kept.notRun
        ? "Approved, but not run: " + String(kept.notRun)
        : kept && kept.passedOn
        ? "Approved" + (kept.grant ? " and remembered (scope " + String(kept.scope) + ", grant " + String(kept.grant) + ")" : "")
          + ": passed on to the stage that runs it, which decides it again as it runs it"
        : kept && kept.grant
        ? "Approved: the call runs, remembered (scope " + String(kept.scope) + ", grant " + String(kept.grant) + ")"
        : kept
        ? "Approved: the call runs"
        : "Approved: being acted on\u2026",
      declined: "Declined: the call is skipped",
      expired: "Expired: " + String(item.reason),
      withdrawn: "Withdrawn: " + String(item.reason),
    };
    footer.append(element("span", "outcome", words[item.state] || String(item.state)));
    card.append(footer);
    // Final once the program said what it did with a yes (redrawn when it does).
    if (item.state !== "approved" || kept || item.reports === false) {
      card.dataset.settled = "yes";
    }
    return card;
  }

  function showPending(list) {
    const listed = new Set();
    for (const item of list) {
      listed.add(item.hold);
      if (!cards.has(item.hold)) {
        const entry = pendingCard(item);
        cards.set(item.hold, entry);
        pendingBox.append(entry.card);
      }
    }
    for (const [hold, entry] of cards) {
      if (!listed.has(hold)) {
        entry.card.remove();
        cards.delete(hold);
      }
    }
    nonePending.hidden = cards.size > 0;
    tick();
  }

  function showEnded(list) {
    // Redrawn when a hold ends, and when its program says what it did with a yes.
    const key = list
      .map((item) => item.hold + ":" + item.state + ":" + JSON.stringify(item.kept || null))
      .join(",");
    if (key === endedShown) {
      return;
    }
    endedShown = key;
    endedBox.replaceChildren(...list.map(endedCard));
  }

  function inWords(seconds) {
    if (seconds < 60) {
      return seconds + " s";
    }
    const minutes = Math.floor(seconds / 60);
    return minutes + " min " + (seconds % 60) + " s";
  }

  function tick() {
    const now = performance.now();
    for (const entry of cards.values()) {
      if (entry.card.dataset.state !== "pending") {
        continue;
      }
      if (entry.deadline === null) {
        entry.timeLeft.textContent = "no time limit";
        continue;
      }
      const left = Math.max(0, Math.ceil((entry.deadline - now) / 1000));
      entry.timeLeft.textContent =
        left > 0 ? inWords(left) + " left, then it is declined" : "time is up: declining";
      entry.timeLeft.classList.toggle("soon", left <= 30);
    }
  }

  async function refresh() {
    if (!token) {
      status.textContent =
        "No token: open the address sc-approve or sc-mcp printed, with its #token=\u2026 part.";
      status.dataset.state = "no-token";
      return;
    }
    try {
      const [pending, ended] = await Promise.all([api("/api/holds"), api("/api/history")]);
      if (pending.status === 401 || ended.status === 401) {
        status.textContent =
          "The token was refused: open the address this run of sc-approve or sc-mcp printed.";
        status.dataset.state = "refused";
        return;
      }
      if (!pending.ok || !ended.ok) {
        throw new Error("status " + pending.status + " / " + ended.status);
      }
      const waiting = await pending.json();
      showPending(waiting);
      showEnded(await ended.json());
      status.textContent =
        waiting.length === 0
          ? "Connected. Nothing is waiting."
          : "Connected. " + waiting.length + (waiting.length === 1 ? " call is" : " calls are") +
            " waiting for you.";
      status.dataset.state = "connected";
    } catch (error) {
      status.textContent =
        "The approver cannot be reached: it may have finished (its input ended and every hold was settled).";
      status.dataset.state = "unreachable";
    }
  }

  function poll() {
    refresh().finally(() => window.setTimeout(poll, POLL_MS));
  }

  window.setInterval(tick, 500);
  poll();
})();
