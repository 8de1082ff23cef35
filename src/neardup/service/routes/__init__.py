"""The routes of the JSON API v1 and the page, one module per resource.

Each module's ``register(app, ctx)`` adds its routes to ``app``; a route parses and checks
the request, calls the backend on its worker thread (:meth:`ServiceContext.run
<neardup.service.context.ServiceContext.run>`) and renders the answer.  No route decides
anything the library decides.
"""
