"""`probe`: can this server's streams be counted to the token (`scenario.Probe`)?"""
