// Filters a table's rows as you type in an <input data-filter-table="TABLE-ID">, without a reload.
// The form still submits to the server (?q=), so the search works without JavaScript and can be linked.
for (const input of document.querySelectorAll("input[data-filter-table]")) {
  const table = document.getElementById(input.dataset.filterTable);
  if (!table) continue;
  const rows = Array.from(table.tBodies[0].rows);
  const texts = rows.map((row) => row.textContent.toLowerCase());
  input.addEventListener("input", () => {
    const q = input.value.trim().toLowerCase();
    rows.forEach((row, i) => { row.hidden = q !== "" && !texts[i].includes(q); });
  });
}
