"""The document formats people keep, each read by a well-kept library made for it.

* :mod:`.text` — what every reader produces: titled lines with pages and named places;
* :mod:`.pdf` — PDF text and scanned pages (pypdfium2; OCR through :mod:`.ocr`), and images;
* :mod:`.office` — Word, PowerPoint and Excel (python-docx, python-pptx, openpyxl);
* :mod:`.opendocument` — OpenDocument text, spreadsheets and presentations (odfpy);
* :mod:`.books` — EPUB (ebooklib) and RTF (striprtf);
* :mod:`.archive` — ZIP containers checked for bombs before any of them opens one.

They run in the reader worker (:mod:`..isolation`), chosen by :mod:`..extract`.
"""
