import unittest

from greeter import page_path


class PagePathTest(unittest.TestCase):
    def test_title_becomes_a_slug(self):
        self.assertEqual(page_path("Hello, World!"), "/pages/hello-world/")


if __name__ == "__main__":
    unittest.main()
