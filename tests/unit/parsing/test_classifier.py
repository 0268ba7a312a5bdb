import pytest

from ragsage.adapters.parsing import LayoutPageClassifier
from ragsage.core.pages import Page, PageImage, PageLayout, PageRoute

IMAGE = PageImage(data=b"png")


@pytest.mark.parametrize(
    ("layout", "route"),
    [
        (PageLayout(text_chars=500, image_area_ratio=1.0, largest_bitmap_area=500_000), "text"),
        (PageLayout(text_chars=3, image_area_ratio=0.9), "vision"),
        (PageLayout(text_chars=3, image_area_ratio=0.5), "vision"),
        (PageLayout(text_chars=3, image_area_ratio=0.1, largest_bitmap_area=60_000), "vision"),
        (PageLayout(text_chars=3, image_area_ratio=0.1, largest_bitmap_area=1_000), "text"),
        (PageLayout(text_chars=0), "text"),
        (PageLayout(text_chars=23, image_area_ratio=0.6), "vision"),
        (PageLayout(text_chars=24, image_area_ratio=0.6), "text"),
    ],
)
def test_thin_text_on_an_image_dominated_page_goes_to_vision(layout, route):
    page = Page(number=1, text="x" * layout.text_chars, layout=layout, image=IMAGE)
    assert LayoutPageClassifier().classify(page) is PageRoute(route)


def test_a_page_without_an_image_never_goes_to_vision():
    layout = PageLayout(text_chars=0, image_area_ratio=1.0, largest_bitmap_area=1e6)
    assert LayoutPageClassifier().classify(Page(1, "", layout=layout)) is PageRoute.TEXT


def test_without_a_layout_blank_text_decides():
    classifier = LayoutPageClassifier()
    assert classifier.classify(Page(1, "  \n", image=IMAGE)) is PageRoute.VISION
    assert classifier.classify(Page(1, "typed words", image=IMAGE)) is PageRoute.TEXT


def test_thresholds_are_tunable():
    strict = LayoutPageClassifier(min_text_chars=1000, max_image_area_ratio=0.2)
    page = Page(1, "a" * 300, layout=PageLayout(300, image_area_ratio=0.3), image=IMAGE)
    assert strict.classify(page) is PageRoute.VISION
    assert LayoutPageClassifier().classify(page) is PageRoute.TEXT
