// Starts Swagger UI on /docs (api/docs.py): a file, not inline, so the page's CSP lets it run.
"use strict";

window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
});
