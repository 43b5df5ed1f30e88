"""The local web workbench (layer 7): edit, validate, plan and compare scenarios in a browser.

Server-rendered with FastAPI, Jinja2 (autoescape on) and HTMX; every asset is served by the
app itself, so it works with no internet. ``create_app`` (``web/app.py``) builds the app;
``clusterwright web`` serves it with uvicorn. FastAPI is imported only by this package.
"""
