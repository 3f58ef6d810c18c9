"""Model downloads and hub jobs off the GUI thread: the manager (:mod:`.manager`, its threads and
signals) and the queue's rows it announces (:mod:`.book`, no Qt).
"""
