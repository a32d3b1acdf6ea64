/*
 * `fleet --html FILE`: one self-contained page. The node table and the outliers' evidence are
 * HTML written here (readable without scripts); the plots (each node's figure against its group's
 * median, one strip per figure and GPU model) are SVG drawn by the page's own script from the
 * report's JSON, embedded in the page. Nothing is fetched: no network, no fonts, no libraries.
 * Every text from a snapshot is escaped; the JSON is embedded so that no "</script>" can end it.
 */
#include "fleet/fleet.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void esc(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&#39;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

/* JSON text inside <script>: '<' as \u003c (no "</script>", no "<!--"), and the two line
 * separators JavaScript once refused inside strings. */
static void embed_json(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("\\u003c", out);
        else if (strncmp(s, "\xe2\x80\xa8", 3) == 0 || strncmp(s, "\xe2\x80\xa9", 3) == 0) {
            fputs(s[2] == '\xa8' ? "\\u2028" : "\\u2029", out);
            s += 2;
        } else
            fputc(*s, out);
    }
}

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}"
    "table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;"
    "border-bottom:1px solid #ddd}th{background:#f3f3f3}"
    "tr.outlier td{background:#fff4d6}tr.critical td{background:#ffd9d6}"
    ".sev-critical{color:#b00020;font-weight:bold}.sev-warning{color:#9a6700;font-weight:bold}"
    "ul.reasons{margin:.2em 0 .8em}.plot{display:block;margin:.3em 0}"
    ".plot .pt{fill:#4a7bd0;fill-opacity:.55}.plot .pt.outlier{fill:#d0301e;fill-opacity:1}"
    ".plot .median{stroke:#222;stroke-width:1.5}.plot .band{fill:#4a7bd0;fill-opacity:.12}"
    ".plot text{font-size:11px;fill:#444}.muted{color:#777}";

/* The plots: for every group and every numeric figure with values, a strip of one dot per node
 * (red: an outlier on that figure), the group's median as a line and the band within which
 * nobody is an outlier. */
static const char script[] =
    "(function(){\n"
    "var d=JSON.parse(document.getElementById('fleet-data').textContent);\n"
    "var ns='http://www.w3.org/2000/svg',root=document.getElementById('plots');\n"
    "function el(n,a,p){var e=document.createElementNS(ns,n);for(var k in a)"
    "e.setAttribute(k,a[k]);if(p)p.appendChild(e);return e;}\n"
    "var kinds={};d.metrics.forEach(function(m){kinds[m.name]=m;});\n"
    "d.groups.forEach(function(g,gi){\n"
    " var h=document.createElement('h3');h.textContent=g.model+' ('+g.nodes+' nodes'+"
    "(g.judged?'':', not compared')+')';root.appendChild(h);\n"
    " Object.keys(g.metrics).forEach(function(name){\n"
    "  var m=kinds[name],st=g.metrics[name];if(m.kind!=='number'||!st.n)return;\n"
    "  var pts=[];d.nodes.forEach(function(n){if(n.group!==gi)return;var v=n.values[name];\n"
    "   if(!v)return;var out=n.reasons.some(function(r){return r.metric===name;});\n"
    "   pts.push({n:n.name,v:v.value,o:out});});\n"
    "  if(!pts.length)return;\n"
    "  var lo=Math.min.apply(null,pts.map(function(p){return p.v;})),"
    "hi=Math.max.apply(null,pts.map(function(p){return p.v;}));\n"
    "  var band=st.mad>0?d.z_threshold*st.mad:0;lo=Math.min(lo,st.median-band);"
    "hi=Math.max(hi,st.median+band);if(hi===lo){hi+=1;lo-=1;}\n"
    "  var W=640,H=54,L=170,R=20,x=function(v){return L+(v-lo)/(hi-lo)*(W-L-R);};\n"
    "  var s=el('svg',{'class':'plot','width':W,'height':H,'data-group':gi,"
    "'data-metric':name},root);\n"
    "  el('text',{x:4,y:24},s).textContent=name+(m.unit?' ('+m.unit+')':'');\n"
    "  el('text',{x:4,y:40,'class':'range'},s).textContent=lo.toPrecision(4)+' .. '+"
    "hi.toPrecision(4);\n"
    "  if(band>0)el('rect',{'class':'band',x:x(st.median-band),y:8,"
    "width:Math.max(1,x(st.median+band)-x(st.median-band)),height:H-16},s);\n"
    "  el('line',{'class':'median',x1:x(st.median),x2:x(st.median),y1:6,y2:H-6},s);\n"
    "  pts.forEach(function(p,i){var c=el('circle',{'class':p.o?'pt outlier':'pt',"
    "cx:x(p.v),cy:H/2+((i%5)-2)*3,r:p.o?5:3,'data-node':p.n},s);\n"
    "   el('title',{},c).textContent=p.n+': '+p.v+(m.unit?' '+m.unit:'');});\n"
    " });\n"
    "});\n"
    "document.body.setAttribute('data-plots',document.querySelectorAll('svg.plot').length);\n"
    "})();\n";

static void reason_item(FILE *out, const struct fleet_reason *r)
{
    char v[300];

    fprintf(out, "<li class=\"reason %s\"><span class=\"sev-%s\">%s</span> ",
            fleet_reason_kind_names[r->kind], severity_names[r->severity],
            severity_names[r->severity]);
    if (r->kind == FLEET_BY_METRIC) {
        const struct fleet_metric *mt = &fleet_metrics[r->metric];

        fleet_value_text(v, sizeof(v), r->metric, r->value);
        fprintf(out, "<b>%s</b>: ", mt->name);
        esc(out, v);
        if (r->value->gpu >= 0)
            fprintf(out, " (GPU %d)", (int)r->value->gpu);
        if (mt->kind == FLEET_NUMBER) {
            fprintf(out, " &mdash; group median %.10g, MAD %.3g", r->median, r->mad);
            if (r->z_valid)
                fprintf(out, ", z %+.1f", r->z);
        } else {
            fputs(" &mdash; group: ", out);
            esc(out, r->majority);
            fprintf(out, " (%zu of %zu nodes)", r->agree, r->of);
        }
    } else if (r->kind == FLEET_BY_FINDING) {
        fputs("finding <b>", out);
        esc(out, r->id);
        fputs("</b>: ", out);
        esc(out, r->text);
        fprintf(out, " (%zu of %zu nodes have it)", r->agree, r->of);
    } else {
        fputs("profile: ", out);
        esc(out, r->text);
    }
    fputs("</li>\n", out);
}

char *fleet_html(const struct fleet *fl, int status)
{
    char *buf = NULL, *json_text;
    size_t len = 0, critical, n_out = fleet_outliers(fl, &critical);
    FILE *out = open_memstream(&buf, &len);
    json_t *j;

    if (out == NULL)
        fatal("out of memory writing the page");
    fprintf(out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
            "<title>gpudoctor fleet: %zu nodes, %zu outliers</title>\n<style>%s</style>"
            "</head>\n<body data-status=\"%d\">\n",
            fl->n, n_out, style, status);
    fprintf(out,
            "<h1>gpudoctor fleet</h1>\n<p id=\"summary\">%zu nodes, %zu GPU model%s: "
            "<b>%zu outlier%s</b> (%zu critical)",
            fl->n, fl->n_groups, fl->n_groups == 1 ? "" : "s", n_out, n_out == 1 ? "" : "s",
            critical);
    if (fl->prometheus) {
        fputs(", from ", out);
        esc(out, fl->prometheus);
    }
    fprintf(out, ". Exit status %d.</p>\n", status);
    for (size_t i = 0; i < fl->n_errors; i++) {
        fputs("<p class=\"error sev-critical\">not read: ", out);
        esc(out, fl->errors[i].source);
        fputs(": ", out);
        esc(out, fl->errors[i].message);
        fputs("</p>\n", out);
    }

    fputs("<h2>Outliers, most serious first</h2>\n<ol id=\"outliers\">\n", out);
    for (size_t r = 1; r <= n_out; r++) {
        for (size_t i = 0; i < fl->n; i++) {
            const struct fleet_node *n = &fl->nodes[i];

            if (n->rank != r)
                continue;
            fputs("<li class=\"outlier\" data-node=\"", out);
            esc(out, n->name);
            fputs("\"><b>", out);
            esc(out, n->name);
            fputs("</b> &mdash; ", out);
            esc(out, n->model);
            fprintf(out, ", %u GPUs\n<ul class=\"reasons\">\n", (unsigned)n->n_gpus);
            for (size_t k = 0; k < n->n_reasons; k++)
                reason_item(out, &n->reasons[k]);
            fputs("</ul></li>\n", out);
        }
    }
    fputs("</ol>\n", out);

    fputs("<h2>Plots</h2>\n<p class=\"muted\">Each dot is a node; red ones are outliers on that "
          "figure. The line is the group's median, the shaded band the range within which no "
          "node is an outlier.</p>\n<div id=\"plots\"></div>\n",
          out);

    fputs("<h2>Nodes</h2>\n<table id=\"nodes\"><thead><tr><th>rank</th><th>node</th>"
          "<th>model</th><th>GPUs</th><th>check</th><th>verdict</th><th>why</th></tr></thead>"
          "<tbody>\n",
          out);
    for (size_t i = 0; i < fl->n; i++) {
        const struct fleet_node *n = &fl->nodes[i];

        fprintf(out, "<tr class=\"node%s%s\" data-node=\"",
                n->verdict == FLEET_OUTLIER ? " outlier" : "",
                n->severity == SEV_CRITICAL ? " critical" : "");
        esc(out, n->name);
        fputs("\"><td>", out);
        if (n->rank)
            fprintf(out, "%zu", n->rank);
        fputs("</td><td>", out);
        esc(out, n->name);
        fputs("</td><td>", out);
        esc(out, n->model);
        fprintf(out, "</td><td>%u</td><td>%s</td><td>%s</td><td>", (unsigned)n->n_gpus,
                n->check_status >= 0 ? (const char *[]){ "healthy", "warning", "critical",
                                                         "unknown" }[n->check_status]
                                     : "?",
                fleet_verdict_names[n->verdict]);
        if (n->n_reasons > 0) {
            const struct fleet_reason *r = &n->reasons[0];

            esc(out, r->kind == FLEET_BY_METRIC ? fleet_metrics[r->metric].name : r->id);
            if (n->n_reasons > 1)
                fprintf(out, " (+%zu)", n->n_reasons - 1);
        }
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody></table>\n", out);

    j = fleet_to_json(fl, status);
    json_text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (json_text == NULL)
        fatal("out of memory serialising the fleet");
    fputs("<script type=\"application/json\" id=\"fleet-data\">", out);
    embed_json(out, json_text);
    free(json_text);
    fprintf(out, "</script>\n<script>\n%s</script>\n</body></html>\n", script);
    if (fclose(out) != 0)
        fatal("out of memory writing the page");
    return buf;
}
