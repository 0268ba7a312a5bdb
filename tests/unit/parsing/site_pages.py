"""HTML pages built the way real documentation sites build them, for reader and chunker tests.

Each builder returns the page and the words a reader must keep, in order; the
menus and banners around them are made of words from ``MENU_WORDS`` only, so a
test can tell at once whether any navigation reached the text.
"""

from __future__ import annotations

from dataclasses import dataclass

MENU_WORDS = (
    "Home",
    "Introduction",
    "Downloads",
    "Mailinglist",
    "Bugtracker",
    "Changelog",
    "Alphabetic",
    "Constructors",
    "Symbols",
    "Previous",
    "Next",
)


@dataclass(frozen=True)
class SitePage:
    html: str
    content: list[str]  # the paragraphs, list items, code lines and cells that must survive


def menu_table(title: str, items: list[str]) -> str:
    """A boxed menu as old sites drew it: a title row, then a row holding a list of links."""
    links = "".join(f'<li><a href="{item.lower()}.html">{item}</a></li>' for item in items)
    return (
        '<table width="100%" border="0"><tr><td bgcolor="#eecfa1"><center><b>'
        f"{title}</b></center></td></tr>"
        f'<tr><td><form action="search.php"><input name="q"/></form><ul>{links}</ul></td></tr>'
        "</table>"
    )


def layout_page(
    paragraphs: list[str],
    *,
    items: list[str] | None = None,
    code: list[str] | None = None,
    rows: list[tuple[str, str]] | None = None,
    banner: str = "Sitetitle",
    page_name: str = "page.html",
) -> SitePage:
    """A page laid out like the libxslt manual: banner row, then menu cell beside content cell."""
    body: list[str] = ["<h2>Contents</h2><ul>"]
    body += [f'<li><a href="{page_name}#s{n}">Section {n}</a></li>' for n in range(3)]
    body.append("</ul>")
    content: list[str] = []
    for number, paragraph in enumerate(paragraphs):
        body.append(f'<h3><a name="s{number}"></a>Part {number}</h3><p>{paragraph}</p>')
        content.append(paragraph)
    if items:
        body.append("<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>")
        content.extend(items)
    if code:
        body.append("<pre>" + "\n".join(code) + "</pre>")
        content.extend(code)
    if rows:
        cells = "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in rows)
        body.append(f"<table><tr><th>Name</th><th>Meaning</th></tr>{cells}</table>")
        content.extend(f"{a} {b}" for a, b in rows)
    menus = menu_table("Main", list(MENU_WORDS[:6])) + menu_table("Indexes", list(MENU_WORDS[6:9]))
    html = (
        "<html><head><title>A manual page</title><style>td {font: x}</style></head>"
        '<body><table width="100%"><tr>'
        '<td width="120"><a href="http://example.org/"><img src="logo.png" alt="Logo"/></a></td>'
        '<td><table bgcolor="#000"><tr><td><table><tr><td align="center">'
        f"<h1>{banner}</h1></td></tr></table></td></tr></table></td></tr></table>"
        '<table width="100%"><tr><td><table><tr>'
        f'<td valign="top" width="200">{menus}</td>'
        f'<td valign="top"><table><tr><td><table><tr><td>{"".join(body)}'
        '<p><a href="bugs.html">Maintainer Name</a></p>'
        "</td></tr></table></td></tr></table></td>"
        "</tr></table></td></tr></table></body></html>"
    )
    return SitePage(html, content)


def modern_page(paragraphs: list[str]) -> SitePage:
    """A page of today's generators: skip link, header, navigation landmarks, footer."""
    nav = "".join(f'<li><a href="{w.lower()}.html">{w}</a></li>' for w in MENU_WORDS)
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    html = (
        "<html><head><title>Modern</title></head><body>"
        '<a class="skip-to-content" href="#main">Next</a>'
        f'<header class="site"><h1>{MENU_WORDS[0]}</h1></header>'
        f'<div role="navigation"><ul>{nav}</ul></div>'
        f'<div class="breadcrumbs"><a href="a.html">Home</a> › <a href="b.html">Next</a></div>'
        f'<div role="main"><h1>Article<a class="mark" href="#a">#</a></h1>{body}</div>'
        '<div class="footer">Previous Next</div></body></html>'
    )
    return SitePage(html, paragraphs)
