// The runs table while you watch: refetch it every 2 s, the same page's table only
// (?fragment=1), and swap it in; and the queue's "choose all" box. Nothing else on
// any page is scripted: every action is a plain form.
(function () {
  "use strict";
  const all = document.querySelector("[data-select-all]");
  if (all) {
    all.addEventListener("change", () => {
      for (const box of document.querySelectorAll("input[name=id]")) box.checked = all.checked;
    });
  }
  const table = document.getElementById("runs");
  if (!table || !table.dataset.live) return;
  const url = new URL(window.location.href);
  url.searchParams.set("fragment", "1");
  async function refresh() {
    if (document.hidden) return; // a tab nobody looks at asks nothing
    try {
      const answer = await fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } });
      if (!answer.ok || answer.redirected) return;
      const holder = document.createElement("div");
      holder.innerHTML = await answer.text();
      const fresh = holder.querySelector("#runs");
      const current = document.getElementById("runs");
      if (fresh && current) current.replaceWith(fresh);
    } catch (error) {
      // The node is away: try again at the next tick.
    }
  }
  window.setInterval(refresh, 2000);
})();
