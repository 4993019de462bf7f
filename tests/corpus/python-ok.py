# expect: ok
# options: --size N=12
def f(N: int, alpha: float, A: 'double[N][N]', B: 'double[N][N]'):
    for i in range(N):
        for j in range(N):
            B[i][j] = alpha * A[i][j]
