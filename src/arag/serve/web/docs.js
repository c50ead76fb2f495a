// Renders /openapi.json offline (no CDN): each endpoint with its method, description and body schema.
"use strict";
const token = new URLSearchParams(location.search).get("token");
fetch("/openapi.json", { headers: token ? { Authorization: `Bearer ${token}` } : {} })
  .then((response) => response.json())
  .then((spec) => {
    const root = document.getElementById("endpoints");
    for (const [path, methods] of Object.entries(spec.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const block = document.createElement("details");
        const summary = document.createElement("summary");
        summary.textContent = `${method.toUpperCase()} ${path} — ${operation.summary || ""}`;
        const body = document.createElement("pre");
        body.textContent = JSON.stringify({ description: operation.description, requestBody: operation.requestBody,
          parameters: operation.parameters, responses: operation.responses }, null, 2);
        block.append(summary, body);
        root.append(block);
      }
    }
    const schemas = document.createElement("pre");
    schemas.textContent = JSON.stringify(spec.components || {}, null, 2);
    root.append(schemas);
  });
