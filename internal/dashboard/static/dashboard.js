// Switchboard dashboard: the copy button of a secret shown once. The pages
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
