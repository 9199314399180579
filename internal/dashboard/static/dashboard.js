// Switchboard dashboard: the copy button of a secret shown once, and the
// transcript's seek buttons. The pages
// work without this file; htmx (vendored next to it) adds live updates.
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-copy]");
  if (!button) return;
  var text = document.getElementById(button.dataset.copy).textContent;
  var status = document.getElementById("copy-status");
  navigator.clipboard.writeText(text).then(function () {
    if (status) status.textContent = "Copied.";
  }, function () {
    if (status) status.textContent = "Copy failed: select the secret and copy it by hand.";
  });
});

// The call page's transcript: a time button plays the recording from
// there. (No inline handlers: the page's CSP allows this file only.)
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-seek]");
  if (!button) return;
  var player = document.getElementById("recording");
  if (!player) return;
  var at = parseFloat(button.dataset.seek);
  var seek = function () {
    player.currentTime = at;
    player.play().catch(function () {});
  };
  // preload="none": the duration is unknown until the metadata has loaded.
  if (player.readyState >= 1) seek();
  else {
    player.addEventListener("loadedmetadata", seek, { once: true });
    player.load();
  }
});
