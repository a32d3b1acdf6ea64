/*
 * `fleet --html FILE`: one self-contained page. The node table and the outliers' evidence are
 * HTML written here (readable without scripts); the plots (each node's figure against its group's
 * median, one strip per figure and GPU model) are SVG drawn by the page's own script from the
 * report's JSON, embedded in the page. Nothing is fetched: no network, no fonts, no libraries.
 * Every text from a snapshot is escaped; the JSON is embedded so that no "</script>" can end it.
 * The page's text for people follows the language (docs/i18n.md), and <html lang> says which; the
 * embedded JSON, the figure names, rule ids and what the script reads stay English.
 */
#include "fleet/fleet.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdbool.h>
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

/* Text for people from the catalogue, in an element: only what would be markup escaped. */
static void text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", out);
        else if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else
            fputc(*s, out);
    }
}

/* A formatted line for people, escaped as a whole (its values come from snapshots). */
static void escf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void escf(FILE *out, const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = xvasprintf(fmt, ap);
    va_end(ap);
    esc(out, s);
    free(s);
}

/* A JavaScript string literal of s, safe inside <script>. */
static void js_string(FILE *out, const char *s)
{
    fputc('\'', out);
    for (; *s; s++) {
        if (*s == '\\' || *s == '\'')
            fprintf(out, "\\%c", *s);
        else if (*s == '<')
            fputs("\\x3c", out);
        else if (*s == '\n')
            fputs("\\n", out);
        else if ((unsigned char)*s < 0x20)
            fprintf(out, "\\x%02x", (unsigned char)*s);
        else if (strncmp(s, "\xe2\x80\xa8", 3) == 0 || strncmp(s, "\xe2\x80\xa9", 3) == 0) {
            fputs(s[2] == '\xa8' ? "\\u2028" : "\\u2029", out);
            s += 2;
        } else
            fputc(*s, out);
    }
    fputc('\'', out);
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
    " var h=document.createElement('h3');h.textContent=";

/* ... the heading of a group's plots (group_heading), then: */
static const char script_tail[] =
    ";root.appendChild(h);\n"
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

/*
 * The script's expression for the heading of a group's plots ("H100 (60 nodes)"): the
 * translated format's text as string literals, its three %s as the group's model, its number of
 * nodes and whether it was compared, which the script takes from the data.
 */
static void group_heading(FILE *out)
{
    /* TRANSLATORS: the heading of a GPU model's plots in fleet's page: the model, its number of
       nodes, then ", not compared" or nothing (the page's script puts them in) */
    char *fmt = xasprintf(_("%s (%s nodes%s)"), "\x01", "\x02", "\x03"), *p = fmt;
    bool first = true;

    while (*p) {
        size_t n = strcspn(p, "\x01\x02\x03");

        if (!first)
            fputc('+', out);
        if (n > 0) {
            char *lit = xasprintf("%.*s", (int)n, p);

            js_string(out, lit);
            free(lit);
            p += n;
        } else {
            if (first && *p == '\x02') /* a number first: still a string */
                fputs("''+", out);
            if (*p == '\x01')
                fputs("g.model", out);
            else if (*p == '\x02')
                fputs("g.nodes", out);
            else {
                fputs("(g.judged?'':", out);
                /* TRANSLATORS: in the heading of a GPU model's plots, after its nodes */
                js_string(out, _(", not compared"));
                fputc(')', out);
            }
            p++;
        }
        first = false;
    }
    if (first)
        fputs("g.model", out);
    free(fmt);
}

/* The severity of a line of evidence, as fleet's text report says it. */
static const char *const severity_words[] = { N_("info"), N_("warning"), N_("critical") };

static void reason_item(FILE *out, const struct fleet_node *n, const struct fleet_reason *r)
{
    char v[300];

    fprintf(out, "<li class=\"reason %s\"><span class=\"sev-%s\">",
            fleet_reason_kind_names[r->kind], severity_names[r->severity]);
    text(out, _(severity_words[r->severity]));
    fputs("</span> ", out);
    if (r->kind == FLEET_BY_METRIC) {
        const struct fleet_metric *mt = &fleet_metrics[r->metric];

        fleet_value_people(v, sizeof(v), r->metric, r->value);
        fprintf(out, "<b>%s</b>: ", mt->name);
        esc(out, v);
        if (r->value->gpu >= 0)
            fprintf(out, " (GPU %d)", (int)r->value->gpu);
        fputs(" &mdash; ", out);
        if (mt->kind == FLEET_NUMBER) {
            /* TRANSLATORS: the group's side of a figure in fleet's page: its median, the MAD */
            escf(out, _("group median %.10g, MAD %.3g"), r->median, r->mad);
            if (r->z_valid)
                /* TRANSLATORS: after the MAD in fleet's page: how far the node is from the
                   median, in MADs ("z" stays) */
                escf(out, _(", z %+.1f"), r->z);
        } else {
            /* the text report's words, without the unit the page never showed there */
            escf(out, _("group: %s%s%s (%zu of %zu nodes)"), r->majority, "", "", r->agree, r->of);
        }
    } else if (r->kind == FLEET_BY_FINDING) {
        const char *title = r->finding && r->finding->title_l ? r->finding->title_l : r->text;
        char *line = xasprintf(_("finding %s: %s (%zu of %zu nodes have it)"), "\x01", "\x02",
                               r->agree, r->of);

        /* the rule id in bold, the title as text, wherever the translation puts them */
        for (const char *p = line; *p; p++) {
            if (*p == '\x01') {
                fputs("<b>", out);
                esc(out, r->id);
                fputs("</b>", out);
            } else if (*p == '\x02')
                esc(out, title);
            else
                esc(out, (char[]){ *p, '\0' });
        }
        free(line);
    } else {
        text(out, _("profile: "));
        if (r->dev != NULL) {
            char *s = fleet_deviation_people(n, r);

            esc(out, s);
            free(s);
        } else
            esc(out, r->text);
    }
    fputs("</li>\n", out);
}

/* TRANSLATORS: the node table's column heads of fleet's page: its rank among the outliers, the
   node, its GPU model, its GPUs, its own check, its verdict, the reason first found */
static const char *const heads[] = { N_("rank"),  N_("node"),    N_("model"), N_("GPUs"),
                                     N_("check"), N_("verdict"), N_("why") };
/* A node's own check, as fleet's text report says it. */
static const char *const check_words[] = { N_("healthy"), N_("warning"), N_("critical"),
                                           N_("unknown") };
/* A node's verdict (fleet_verdict_names) for people. */
static const char *const verdict_words[] = {
    N_("ok"), N_("outlier"),
    /* TRANSLATORS: a node's verdict in fleet's page: its group is too small to compare */
    N_("not-judged")
};

char *fleet_html(const struct fleet *fl, int status)
{
    char *buf = NULL, *json_text;
    size_t len = 0, critical, n_out = fleet_outliers(fl, &critical);
    FILE *out = open_memstream(&buf, &len);
    json_t *j;

    if (out == NULL)
        fatal("out of memory writing the page");
    fputs("<!DOCTYPE html>\n<html lang=\"", out);
    esc(out, i18n_language());
    fputs("\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n<title>",
          out);
    /* TRANSLATORS: the title of fleet's page (the browser's tab) */
    escf(out, _("gpudoctor fleet: %zu nodes, %zu outliers"), fl->n, n_out);
    fprintf(out, "</title>\n<style>%s</style></head>\n<body data-status=\"%d\">\n", style, status);
    fputs("<h1>gpudoctor fleet</h1>\n<p id=\"summary\">", out);
    /* the page has always said "nodes", even of one */
    escf(out, _("%zu node%s, %zu GPU model%s: "), fl->n, "s", fl->n_groups,
         fl->n_groups == 1 ? "" : "s");
    fputs("<b>", out);
    /* TRANSLATORS: fleet's page: "3 outliers" (in bold), then " (1 critical)"; %s is the
       English plural's "s" (write %.0s to leave it out) */
    escf(out, _("%zu outlier%s"), n_out, n_out == 1 ? "" : "s");
    fputs("</b>", out);
    escf(out, _(" (%zu critical)"), critical);
    if (fl->prometheus)
        /* TRANSLATORS: fleet's page: the Prometheus server the nodes were read from */
        escf(out, _(", from %s"), fl->prometheus);
    /* TRANSLATORS: the end of the first paragraph of fleet's page: gpudoctor's exit status */
    escf(out, _(". Exit status %d."), status);
    fputs("</p>\n", out);
    for (size_t i = 0; i < fl->n_errors; i++) {
        fputs("<p class=\"error sev-critical\">", out);
        text(out, _("not read"));
        fputs(": ", out);
        esc(out, fl->errors[i].source);
        fputs(": ", out);
        esc(out, fl->errors[i].message);
        fputs("</p>\n", out);
    }

    fputs("<h2>", out);
    text(out, _("Outliers, most serious first"));
    fputs("</h2>\n<ol id=\"outliers\">\n", out);
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
            /* TRANSLATORS: fleet's page: an outlier's GPUs, after its name and model */
            escf(out, _(", %u GPUs"), (unsigned)n->n_gpus);
            fputs("\n<ul class=\"reasons\">\n", out);
            for (size_t k = 0; k < n->n_reasons; k++)
                reason_item(out, n, &n->reasons[k]);
            fputs("</ul></li>\n", out);
        }
    }
    fputs("</ol>\n", out);

    fputs("<h2>", out);
    /* TRANSLATORS: a heading of fleet's page */
    text(out, _("Plots"));
    fputs("</h2>\n<p class=\"muted\">", out);
    /* TRANSLATORS: fleet's page: how to read its plots */
    text(out, _("Each dot is a node; red ones are outliers on that figure. The line is the "
                "group's median, the shaded band the range within which no node is an outlier."));
    fputs("</p>\n<div id=\"plots\"></div>\n<h2>", out);
    /* TRANSLATORS: a heading of fleet's page */
    text(out, _("Nodes"));
    fputs("</h2>\n<table id=\"nodes\"><thead><tr>", out);
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        fputs("<th>", out);
        text(out, _(heads[i]));
        fputs("</th>", out);
    }
    fputs("</tr></thead><tbody>\n", out);
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
        fprintf(out, "</td><td>%u</td><td>", (unsigned)n->n_gpus);
        text(out, n->check_status >= 0 ? _(check_words[n->check_status > 3 ? 3 : n->check_status])
                                       : "?");
        fputs("</td><td>", out);
        text(out, _(verdict_words[n->verdict]));
        fputs("</td><td>", out);
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
    fprintf(out, "</script>\n<script>\n%s", script);
    group_heading(out);
    fprintf(out, "%s</script>\n</body></html>\n", script_tail);
    if (fclose(out) != 0)
        fatal("out of memory writing the page");
    return buf;
}
