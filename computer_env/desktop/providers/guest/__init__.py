"""What a desktop's guest gets on top of its system: the pristine home template, Chromium set up
as OSWorld's tasks expect Google Chrome, and the programs and files the local desktop adds.
Shared by the local provider and the guest image (``docker/Dockerfile``).

May import: nothing else of the providers (the guest image imports it alone).
"""
